package dev.hadronio.conformance;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertFalse;
import static org.junit.Assert.assertTrue;

import java.nio.ByteBuffer;
import java.nio.channels.AsynchronousCloseException;
import java.nio.channels.ClosedByInterruptException;
import java.nio.channels.ClosedChannelException;
import java.nio.channels.SelectionKey;
import java.nio.channels.Selector;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.util.List;
import java.util.concurrent.Callable;
import org.junit.Test;
import org.junit.runner.RunWith;
import org.junit.runners.Parameterized;
import org.junit.runners.Parameterized.Parameters;

/**
 * Scenario 13: closing a channel that another thread is blocked on wakes that thread with
 * {@link AsynchronousCloseException}; interrupting a thread blocked on a channel closes the channel and
 * gives {@link ClosedByInterruptException} with the interrupt status kept; double close is harmless and
 * close invalidates selection keys.
 */
@RunWith(Parameterized.class)
public class CloseSemanticsTest extends AbstractConformanceTest {

    @Parameters(name = "{0}")
    public static List<Object[]> parameters() {
        return Providers.parameters();
    }

    /** What a helper thread saw: the exception and whether its interrupt status was set afterwards. */
    static final class Outcome {
        final Throwable thrown;
        final boolean interrupted;

        Outcome(Throwable thrown, boolean interrupted) {
            this.thrown = thrown;
            this.interrupted = interrupted;
        }
    }

    /** Runs {@code body}, which must throw, in a helper thread; returns what it threw and its interrupt status. */
    private Background<Outcome> expectFailure(String name, Callable<?> body) {
        return background(name, () -> {
            try {
                Object result = body.call();
                throw new AssertionError(name + " returned " + result + " instead of throwing");
            } catch (Exception e) {
                return new Outcome(e, Thread.currentThread().isInterrupted());
            }
        });
    }

    private static void assertExactly(Class<? extends Throwable> expected, Throwable thrown) {
        if (thrown.getClass() != expected) {
            throw new AssertionError("expected exactly " + expected.getName() + " but got " + thrown, thrown);
        }
    }

    @Test
    public void closeWhileBlockedInRead() throws Exception {
        Pair pair = connectPair();
        Background<Outcome> reader = expectFailure("reader", () -> pair.client.read(ByteBuffer.allocate(100)));
        awaitBlockedIn(reader.thread(), pair.client, "read");
        pair.client.close();
        Outcome outcome = reader.join();
        assertExactly(AsynchronousCloseException.class, outcome.thrown);
        assertFalse(pair.client.isOpen());
        assertEquals("peer sees end of stream", -1, pair.server.read(ByteBuffer.allocate(1)));
    }

    @Test
    public void closeWhileBlockedInScatteringReadIntoDirectBuffers() throws Exception {
        Pair pair = connectPair();
        Background<Outcome> reader = expectFailure("reader",
                () -> pair.client.read(new ByteBuffer[] {ByteBuffer.allocateDirect(10), ByteBuffer.allocate(10)}));
        awaitBlockedIn(reader.thread(), pair.client, "read");
        pair.client.close();
        assertExactly(AsynchronousCloseException.class, reader.join().thrown);
    }

    @Test
    public void interruptWhileBlockedInRead() throws Exception {
        Pair pair = connectPair();
        Background<Outcome> reader = expectFailure("reader", () -> pair.client.read(ByteBuffer.allocate(100)));
        awaitBlockedIn(reader.thread(), pair.client, "read");
        reader.thread().interrupt();
        Outcome outcome = reader.join();
        assertExactly(ClosedByInterruptException.class, outcome.thrown);
        assertTrue("interrupt status kept", outcome.interrupted);
        assertFalse("the interrupt closed the channel", pair.client.isOpen());
        assertEquals("peer sees end of stream", -1, pair.server.read(ByteBuffer.allocate(1)));
    }

    @Test
    public void interruptBeforeBlockingRead() throws Exception {
        Pair pair = connectPair();
        Background<Outcome> reader = expectFailure("reader", () -> {
            Thread.currentThread().interrupt();
            return pair.client.read(ByteBuffer.allocate(100));
        });
        Outcome outcome = reader.join();
        assertExactly(ClosedByInterruptException.class, outcome.thrown);
        assertTrue("interrupt status kept", outcome.interrupted);
        assertFalse("the interrupt closed the channel", pair.client.isOpen());
    }

    /** Since JDK 11 an interrupt affects blocking operations only: a non-blocking read ignores it. */
    @Test
    public void interruptDoesNotCloseNonBlockingChannel() throws Exception {
        Pair pair = connectPair();
        pair.client.configureBlocking(false);
        Background<Integer> reader = background("reader", () -> {
            Thread.currentThread().interrupt();
            int n = pair.client.read(ByteBuffer.allocate(100));
            assertTrue("interrupt status kept", Thread.interrupted());
            return n;
        });
        assertEquals("non-blocking read without data", 0, (int) reader.join());
        assertTrue("channel still open", pair.client.isOpen());
        pair.server.write(ByteBuffer.wrap(new byte[] {1}));
        await("the byte to arrive", () -> {
            try {
                return pair.client.read(ByteBuffer.allocate(1)) == 1;
            } catch (java.io.IOException e) {
                throw new AssertionError(e);
            }
        });
    }

    @Test
    public void closeWhileBlockedInAccept() throws Exception {
        ServerSocketChannel server = openServer();
        Background<Outcome> acceptor = expectFailure("acceptor", server::accept);
        awaitBlockedIn(acceptor.thread(), server, "accept");
        server.close();
        assertExactly(AsynchronousCloseException.class, acceptor.join().thrown);
        assertFalse(server.isOpen());
    }

    @Test
    public void interruptWhileBlockedInAccept() throws Exception {
        ServerSocketChannel server = openServer();
        Background<Outcome> acceptor = expectFailure("acceptor", server::accept);
        awaitBlockedIn(acceptor.thread(), server, "accept");
        acceptor.thread().interrupt();
        Outcome outcome = acceptor.join();
        assertExactly(ClosedByInterruptException.class, outcome.thrown);
        assertTrue("interrupt status kept", outcome.interrupted);
        assertFalse("the interrupt closed the channel", server.isOpen());
    }

    /**
     * A writer blocked because the peer does not read is woken by close(). Its write loop ends with a
     * {@link ClosedChannelException}: exactly {@link AsynchronousCloseException} if the blocked write had
     * written nothing yet, else that write returns its partial count and the next write throws.
     */
    @Test
    public void closeWhileBlockedInWrite() throws Exception {
        Pair pair = connectPair();
        ByteBuffer chunk = ByteBuffer.allocateDirect(1024 * 1024);
        Background<Outcome> writer = expectFailure("writer", () -> {
            while (true) {
                chunk.clear();
                pair.client.write(chunk);
            }
        });
        awaitBlockedIn(writer.thread(), pair.client, "write");
        pair.client.close();
        Throwable thrown = writer.join().thrown;
        assertTrue("a ClosedChannelException: " + thrown, thrown instanceof ClosedChannelException);
        assertFalse(pair.client.isOpen());
    }

    @Test
    public void doubleCloseIsHarmless() throws Exception {
        ServerSocketChannel server = openServer();
        Pair pair = connectPair(server);
        Selector selector = track(provider.openSelector());
        SocketChannel unconnected = newClient();
        for (int i = 0; i < 2; i++) {
            pair.client.close();
            pair.server.close();
            server.close();
            selector.close();
            unconnected.close();
        }
        pair.client.socket().close();
        server.socket().close();
        assertFalse(pair.client.isOpen());
        assertFalse(pair.server.isOpen());
        assertFalse(server.isOpen());
        assertFalse(selector.isOpen());
        assertFalse(unconnected.isOpen());
    }

    @Test
    public void closeInvalidatesSelectionKeys() throws Exception {
        Pair pair = connectPair();
        try (Selector selector = provider.openSelector()) {
            pair.client.configureBlocking(false);
            SelectionKey key = pair.client.register(selector, SelectionKey.OP_READ);
            assertTrue(key.isValid());
            assertTrue(pair.client.isRegistered());
            pair.client.close();
            assertFalse("close() cancels the key at once", key.isValid());
            selector.selectNow();
            assertFalse("deregistered by the next selection", selector.keys().contains(key));
            assertFalse(pair.client.isRegistered());
        }
        assertEquals("peer sees end of stream", -1, pair.server.read(ByteBuffer.allocate(1)));
    }
}
