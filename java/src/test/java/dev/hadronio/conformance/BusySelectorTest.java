package dev.hadronio.conformance;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertTrue;
import static org.junit.Assert.fail;

import java.nio.ByteBuffer;
import java.nio.channels.SelectionKey;
import java.nio.channels.Selector;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.util.ArrayList;
import java.util.List;
import org.junit.Test;
import org.junit.runner.RunWith;
import org.junit.runners.Parameterized;
import org.junit.runners.Parameterized.Parameter;
import org.junit.runners.Parameterized.Parameters;

/**
 * A key that stays ready must not hide the other channels of its selector. One key is ready on every
 * select (an idle channel registered for OP_WRITE, or a server channel registered for OP_ACCEPT whose
 * pending connection the application does not accept); a second channel, registered for OP_READ, must
 * still be reported each time its peer writes, and its end of stream too, with every select form.
 *
 * <p>Rows: provider x busy key ({@code write}, {@code accept}) x select form ({@code select()},
 * {@code select(timeout)}, {@code selectNow()}).
 */
@RunWith(Parameterized.class)
public class BusySelectorTest extends AbstractConformanceTest {

    /** Messages the watched channel must be told about, one at a time. */
    static final int ROUNDS = 20;

    @Parameters(name = "{0}-{1}-{2}")
    public static List<Object[]> parameters() {
        List<Object[]> rows = new ArrayList<>();
        for (Providers.Target provider : Providers.all()) {
            for (String busy : new String[] {"write", "accept"}) {
                for (String form : new String[] {"select", "selectTimeout", "selectNow"}) {
                    rows.add(new Object[] {provider, busy, form});
                }
            }
        }
        return rows;
    }

    @Parameter(1)
    public String busy;

    @Parameter(2)
    public String form;

    private int select(Selector selector) throws Exception {
        switch (form) {
            case "select":
                return selector.select();
            case "selectTimeout":
                return selector.select(50);
            default:
                return selector.selectNow();
        }
    }

    @Test
    public void readyKeyDoesNotHideOthers() throws Exception {
        Selector selector = track(provider.openSelector());
        ServerSocketChannel server = openServer();
        SelectionKey busyKey;
        if (busy.equals("write")) {
            Pair idle = connectPair(server);
            idle.server.configureBlocking(false);
            busyKey = idle.server.register(selector, SelectionKey.OP_WRITE);
        } else {
            ServerSocketChannel unattended = openServer();
            unattended.configureBlocking(false);
            busyKey = unattended.register(selector, SelectionKey.OP_ACCEPT);
            SocketChannel waiting = newClient();
            assertTrue(waiting.connect(unattended.getLocalAddress()));
        }
        await("the busy key to be reported", () -> {
            try {
                select(selector);
            } catch (Exception e) {
                throw new AssertionError(e);
            }
            boolean reported = selector.selectedKeys().contains(busyKey);
            selector.selectedKeys().clear();
            return reported;
        });

        Pair watched = connectPair(server);
        watched.server.configureBlocking(false);
        SelectionKey readKey = watched.server.register(selector, SelectionKey.OP_READ);
        ByteBuffer buffer = ByteBuffer.allocate(64);
        for (int round = 0; round <= ROUNDS; round++) {
            if (round < ROUNDS) {
                writeFully(watched.client, ByteBuffer.wrap(new byte[] {(byte) round}));
            } else {
                watched.client.close();
            }
            long deadline = System.nanoTime() + WAIT_SECONDS * 1_000_000_000L;
            int busyReports = 0;
            int read = 0;
            while (read == 0) {
                if (System.nanoTime() > deadline) {
                    fail("round " + round + ": the busy key was reported " + busyReports
                            + " times in " + WAIT_SECONDS + " s, the readable channel never");
                }
                select(selector);
                if (selector.selectedKeys().contains(busyKey)) {
                    busyReports++;
                }
                if (selector.selectedKeys().contains(readKey)) {
                    assertTrue("the watched key is reported readable", readKey.isReadable());
                    buffer.clear();
                    read = watched.server.read(buffer);
                }
                selector.selectedKeys().clear();
            }
            if (round < ROUNDS) {
                assertEquals("round " + round + ": one byte", 1, read);
                assertEquals("round " + round + ": the byte written", (byte) round, buffer.get(0));
            } else {
                assertEquals("end of stream after the peer closed", -1, read);
            }
        }
        assertTrue("the busy key is still valid", busyKey.isValid());
    }
}
