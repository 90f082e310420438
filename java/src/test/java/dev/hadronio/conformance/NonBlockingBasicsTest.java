package dev.hadronio.conformance;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertFalse;
import static org.junit.Assert.assertNull;
import static org.junit.Assert.assertSame;
import static org.junit.Assert.assertTrue;
import static org.junit.Assert.fail;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.channels.Selector;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.Test;
import org.junit.runner.RunWith;
import org.junit.runners.Parameterized;
import org.junit.runners.Parameterized.Parameters;

/**
 * Scenario 14: non-blocking mode without a selector. {@code accept()} returns null when nothing is
 * pending, {@code read()} returns 0 without data, {@code connect()} is completed by polling
 * {@code finishConnect()}, and {@code write()} returns 0 once a peer that does not read has let the
 * transport's buffers fill (memory is bounded).
 */
@RunWith(Parameterized.class)
public class NonBlockingBasicsTest extends AbstractConformanceTest {

    @Parameters(name = "{0}")
    public static List<Object[]> parameters() {
        return Providers.parameters();
    }

    @Test
    public void newChannelsBelongToProviderAndStartBlocking() throws Exception {
        SocketChannel client = newClient();
        ServerSocketChannel server = newServer();
        assertSame("SocketChannel.provider()", provider, client.provider());
        assertSame("ServerSocketChannel.provider()", provider, server.provider());
        try (Selector selector = provider.openSelector()) {
            assertSame("Selector.provider()", provider, selector.provider());
        }
        assertTrue(client.isBlocking());
        assertTrue(server.isBlocking());
        assertSame("configureBlocking returns the channel", client, client.configureBlocking(false));
        assertFalse(client.isBlocking());
        assertSame(server, server.configureBlocking(false));
        assertFalse(server.isBlocking());
    }

    @Test
    public void acceptReturnsNullWhenNothingIsPending() throws Exception {
        ServerSocketChannel server = openServer();
        server.configureBlocking(false);
        for (int i = 0; i < 3; i++) {
            assertNull("non-blocking accept() with nothing pending", server.accept());
        }
        SocketChannel client = newClient();
        assertTrue(client.connect(server.getLocalAddress()));
        AtomicReference<SocketChannel> accepted = new AtomicReference<>();
        await("a non-blocking accept() to return the connection", () -> {
            try {
                accepted.set(server.accept());
            } catch (IOException e) {
                throw new UncheckedIOException(e);
            }
            return accepted.get() != null;
        });
        SocketChannel channel = track(accepted.get());
        assertTrue("an accepted channel is blocking, whatever the server's mode", channel.isBlocking());
        assertEquals(client.getLocalAddress(), channel.getRemoteAddress());
        assertNull("nothing more pending", server.accept());
    }

    @Test
    public void readReturnsZeroWithoutData() throws Exception {
        Pair pair = connectPair();
        pair.client.configureBlocking(false);
        assertEquals("read() without data", 0, pair.client.read(ByteBuffer.allocate(10)));
        assertEquals("read() into a direct buffer without data", 0, pair.client.read(ByteBuffer.allocateDirect(10)));
        assertEquals("scattering read() without data", 0L,
                pair.client.read(new ByteBuffer[] {ByteBuffer.allocate(4), ByteBuffer.allocateDirect(4)}));

        byte[] data = randomBytes(60, 5000);
        writeFully(pair.server, ByteBuffer.wrap(data));
        ByteBuffer received = ByteBuffer.allocate(data.length);
        await("the data to arrive", () -> {
            try {
                int n = pair.client.read(received);
                assertTrue("non-blocking read() before end of stream returned " + n, n >= 0);
            } catch (IOException e) {
                throw new UncheckedIOException(e);
            }
            return !received.hasRemaining();
        });
        assertBytesEqual("data read in non-blocking mode", data, received.array());
        assertEquals("no more data", 0, pair.client.read(ByteBuffer.allocate(10)));

        pair.server.close();
        AtomicReference<Integer> last = new AtomicReference<>();
        await("end of stream", () -> {
            try {
                last.set(pair.client.read(ByteBuffer.allocate(10)));
            } catch (IOException e) {
                throw new UncheckedIOException(e);
            }
            assertTrue("read() after all data returned " + last.get(), last.get() <= 0);
            return last.get() < 0;
        });
        assertEquals("end of stream again", -1, pair.client.read(ByteBuffer.allocate(10)));
    }

    @Test
    public void connectCompletedByFinishConnect() throws Exception {
        ServerSocketChannel server = openServer();
        Background<SocketChannel> acceptor = background("accept", () -> track(server.accept()));
        SocketChannel client = newClient();
        client.configureBlocking(false);
        boolean connected = client.connect(server.getLocalAddress());
        assertEquals("isConnectionPending() after connect() returned " + connected, !connected,
                client.isConnectionPending());
        await("finishConnect() to return true", () -> {
            try {
                return client.finishConnect();
            } catch (IOException e) {
                throw new UncheckedIOException(e);
            }
        });
        assertTrue(client.isConnected());
        assertFalse(client.isConnectionPending());
        assertTrue("finishConnect() stays true", client.finishConnect());
        SocketChannel accepted = acceptor.join();
        assertEquals(client.getLocalAddress(), accepted.getRemoteAddress());
        assertEquals(server.getLocalAddress(), client.getRemoteAddress());

        ByteBuffer message = ByteBuffer.wrap(new byte[] {1, 2, 3});
        await("a non-blocking write() to send the message", () -> {
            try {
                client.write(message);
            } catch (IOException e) {
                throw new UncheckedIOException(e);
            }
            return !message.hasRemaining();
        });
        assertEquals(3, readExactly(accepted, 3)[2]);
    }

    @Test
    public void writeReturnsZeroWhenPeerDoesNotRead() throws Exception {
        int limit = 64 * 1024 * 1024;
        byte[] data = randomBytes(61, limit);
        Pair pair = connectPair();
        pair.client.configureBlocking(false);

        int written = 0;
        boolean full = false;
        while (!full) {
            if (written >= limit) {
                fail("a non-blocking write() never returned 0 after " + limit
                        + " bytes to a peer that does not read: memory must be bounded");
            }
            ByteBuffer chunk = ByteBuffer.wrap(data, written, Math.min(64 * 1024, limit - written));
            int before = chunk.position();
            int n = pair.client.write(chunk);
            assertTrue("non-blocking write() returned " + n, n >= 0 && n <= 64 * 1024);
            assertEquals("position moves by the count", before + n, chunk.position());
            written += n;
            full = n == 0;
        }

        int total = written;
        byte[] received = readExactly(pair.server, total);
        assertBytesEqual("bytes accepted by non-blocking writes", Arrays.copyOf(data, total), received);

        ByteBuffer more = ByteBuffer.wrap(data, total, 1000);
        await("write() to accept data again once the peer read", () -> {
            try {
                pair.client.write(more);
            } catch (IOException e) {
                throw new UncheckedIOException(e);
            }
            return !more.hasRemaining();
        });
        assertBytesEqual("bytes written after draining", Arrays.copyOfRange(data, total, total + 1000),
                readExactly(pair.server, 1000));
    }
}
