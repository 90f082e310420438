package dev.hadronio.conformance;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertTrue;

import java.nio.ByteBuffer;
import java.nio.channels.SelectionKey;
import java.nio.channels.Selector;
import java.util.ArrayList;
import java.util.List;
import org.junit.Test;
import org.junit.runner.RunWith;
import org.junit.runners.Parameterized;
import org.junit.runners.Parameterized.Parameters;

/**
 * {@link Selector#wakeup()} as the JDK specifies it: several calls between two selects count as
 * one, a call made while a select blocks ends it however many threads call at once, and a key's
 * interest set to what it already is leaves the key as it was.
 */
@RunWith(Parameterized.class)
public class WakeupTest extends AbstractConformanceTest {

    @Parameters(name = "{0}")
    public static List<Object[]> parameters() {
        return Providers.parameters();
    }

    /** Rounds of a select that several threads wake at once. */
    static final int ROUNDS = 300;

    /** Threads that call {@code wakeup()} together. */
    static final int WAKERS = 4;

    /** Registers the client side of {@code pair}, made non-blocking, for OP_READ. */
    private static SelectionKey watchReads(Selector selector, Pair pair) throws Exception {
        pair.client.configureBlocking(false);
        return pair.client.register(selector, SelectionKey.OP_READ);
    }

    @Test
    public void wakeupsBetweenSelectsCountOnce() throws Exception {
        Selector selector = track(provider.openSelector());
        Pair pair = connectPair(openServer());
        SelectionKey key = watchReads(selector, pair);
        selector.wakeup();
        selector.wakeup();
        selector.wakeup();
        assertEquals(0, selector.select());
        // Had a second wakeup been kept, this select would return 0 at once instead of the key.
        Background<Void> writer = Background.start("writer", () -> {
            pair.server.write(ByteBuffer.wrap(new byte[] {42}));
            return null;
        });
        assertEquals(1, selector.select());
        assertTrue(selector.selectedKeys().contains(key));
        writer.join();
    }

    @Test
    public void concurrentWakeupsEndEveryBlockedSelect() throws Exception {
        Selector selector = track(provider.openSelector());
        for (int round = 0; round < ROUNDS; round++) {
            List<Thread> wakers = new ArrayList<>();
            for (int i = 0; i < WAKERS; i++) {
                Thread waker = new Thread(selector::wakeup, "waker-" + i);
                waker.setDaemon(true);
                waker.start();
                wakers.add(waker);
            }
            // Returns only once woken: a wakeup lost between the threads hangs here until the
            // test's timeout.
            assertEquals(0, selector.select());
            for (Thread waker : wakers) {
                waker.join();
            }
        }
    }

    @Test
    public void unchangedInterestKeepsTheKey() throws Exception {
        Selector selector = track(provider.openSelector());
        Pair pair = connectPair(openServer());
        SelectionKey key = watchReads(selector, pair);
        pair.server.write(ByteBuffer.wrap(new byte[] {7}));
        key.interestOps(SelectionKey.OP_READ);
        assertEquals(SelectionKey.OP_READ, key.interestOps());
        assertEquals(1, selector.select());
        assertEquals(SelectionKey.OP_READ, key.readyOps());
        selector.selectedKeys().clear();
        key.interestOps(0);
        key.interestOps(0);
        assertEquals(0, selector.selectNow());
        key.interestOps(SelectionKey.OP_READ);
        key.interestOps(SelectionKey.OP_READ);
        assertEquals(1, selector.select());
    }
}
