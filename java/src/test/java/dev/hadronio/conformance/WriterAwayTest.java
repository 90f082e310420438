package dev.hadronio.conformance;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertTrue;

import java.nio.ByteBuffer;
import java.nio.channels.SelectionKey;
import java.nio.channels.Selector;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.util.Arrays;
import java.util.List;
import org.junit.Test;
import org.junit.runner.RunWith;
import org.junit.runners.Parameterized;
import org.junit.runners.Parameterized.Parameters;

/**
 * Scenario 15: bytes a non-blocking write accepted are delivered even if the writing thread never
 * comes back to its selector (it blocks elsewhere, as an event loop running a long task or a
 * program waiting for the answer on another channel does). With the kernel's TCP the send buffer
 * drains by itself; the writer here writes through a selector-registered channel and then only
 * waits for the reader.
 */
@RunWith(Parameterized.class)
public class WriterAwayTest extends AbstractConformanceTest {

    @Parameters(name = "{0}")
    public static List<Object[]> parameters() {
        return Providers.parameters();
    }

    /** Writes until the transport is full, then stops selecting: the reader still gets every byte. */
    @Test
    public void bytesBufferedByNonBlockingWritesArriveWhileWriterIsAway() throws Exception {
        int limit = 64 * 1024 * 1024;
        byte[] data = randomBytes(151, limit);
        ServerSocketChannel server = openServer();
        Background<SocketChannel> acceptor = background("accept", () -> track(server.accept()));
        int written = 0;
        try (Selector selector = provider.openSelector()) {
            // Used through the selector from the start, so the channel belongs to the selector.
            SelectionKey key = connectThrough(selector, server);
            SocketChannel client = (SocketChannel) key.channel();
            SocketChannel accepted = acceptor.join();
            key.interestOps(SelectionKey.OP_WRITE);
            // A first byte, and time for hadroNIO's upgrade: the bytes below then wait for
            // credits rather than for the socket.
            while (client.write(ByteBuffer.wrap(new byte[] {42})) == 0) {
                selector.select(10);
            }
            long settle = System.nanoTime() + 200_000_000L;
            while (System.nanoTime() < settle) {
                selector.select(1);
            }
            assertEquals(42, readExactly(accepted, 1)[0]);
            while (true) {
                selector.selectNow();
                int n = client.write(ByteBuffer.wrap(data, written, Math.min(256 * 1024, limit - written)));
                written += n;
                if (n == 0 || written == limit) {
                    break;
                }
            }
            // The writer is away from now on: no select, no write, until the reader has everything.
            byte[] received = readExactly(accepted, written);
            assertBytesEqual("bytes accepted by non-blocking writes", Arrays.copyOf(data, written), received);
        }
    }

    /** A write right after accept, before the peer said anything; then the writer waits. */
    @Test
    public void writeRightAfterAcceptArrivesWhileWriterIsAway() throws Exception {
        byte[] data = randomBytes(152, 100);
        Pair pair = connectPair();
        try (Selector selector = provider.openSelector()) {
            pair.server.configureBlocking(false);
            pair.server.register(selector, SelectionKey.OP_READ);
            ByteBuffer buffer = ByteBuffer.wrap(data);
            int n = pair.server.write(buffer);
            assertEquals("a write of 100 bytes right after accept takes them all", 100, n);
            assertTrue(!buffer.hasRemaining());
            assertBytesEqual("bytes written right after accept", data, readExactly(pair.client, 100));
        }
    }
}
