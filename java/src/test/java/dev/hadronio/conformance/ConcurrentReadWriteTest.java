package dev.hadronio.conformance;

import static org.junit.Assert.assertEquals;

import java.nio.ByteBuffer;
import java.nio.channels.SocketChannel;
import java.util.List;
import java.util.Random;
import java.util.zip.CRC32;
import org.junit.Test;
import org.junit.runner.RunWith;
import org.junit.runners.Parameterized;
import org.junit.runners.Parameterized.Parameters;

/**
 * Scenario 9: one thread writes to a blocking channel while another thread reads from the same channel
 * at the same time (design requirement 7); checksums and counts match.
 */
@RunWith(Parameterized.class)
public class ConcurrentReadWriteTest extends AbstractConformanceTest {

    static final long MIB = 1024 * 1024;

    @Parameters(name = "{0}")
    public static List<Object[]> parameters() {
        return Providers.parameters();
    }

    /** Count and CRC32 of a byte stream. */
    static final class Summary {
        final long bytes;
        final long crc;

        Summary(long bytes, long crc) {
            this.bytes = bytes;
            this.crc = crc;
        }
    }

    @Test
    public void echoOf64MiBWhileWriting() throws Exception {
        Pair pair = connectPair();
        Background<Long> echo = startEcho(pair.server, BufferKind.HEAP, 64 * 1024);
        Background<Summary> writer = background("writer",
                () -> writeStream(pair.client, 64 * MIB, 40, BufferKind.DIRECT, 256 * 1024, true));
        Background<Summary> reader = background("reader", () -> readStream(pair.client, BufferKind.HEAP, 64 * 1024));

        Summary sent = writer.join();
        Summary received = reader.join();
        assertEquals("bytes sent", 64 * MIB, sent.bytes);
        assertEquals("bytes echoed", 64 * MIB, (long) echo.join());
        assertEquals("bytes received", sent.bytes, received.bytes);
        assertEquals("CRC32", sent.crc, received.crc);
    }

    @Test
    public void fullDuplexOnBothEnds() throws Exception {
        Pair pair = connectPair();
        long size = 16 * MIB;
        Background<Summary> clientWriter = background("client-writer",
                () -> writeStream(pair.client, size, 41, BufferKind.HEAP, 100_000, true));
        Background<Summary> serverWriter = background("server-writer",
                () -> writeStream(pair.server, size, 42, BufferKind.DIRECT, 64 * 1024, true));
        Background<Summary> clientReader = background("client-reader",
                () -> readStream(pair.client, BufferKind.DIRECT, 32 * 1024));
        Background<Summary> serverReader = background("server-reader",
                () -> readStream(pair.server, BufferKind.HEAP, 50_000));

        Summary clientSent = clientWriter.join();
        Summary serverSent = serverWriter.join();
        Summary serverReceived = serverReader.join();
        Summary clientReceived = clientReader.join();
        assertEquals("client to server: bytes", clientSent.bytes, serverReceived.bytes);
        assertEquals("client to server: CRC32", clientSent.crc, serverReceived.crc);
        assertEquals("server to client: bytes", serverSent.bytes, clientReceived.bytes);
        assertEquals("server to client: CRC32", serverSent.crc, clientReceived.crc);
        assertEquals(size, clientSent.bytes);
        assertEquals(size, serverSent.bytes);
    }

    /** Writes {@code total} seeded random bytes in chunks, then optionally shuts down output. */
    static Summary writeStream(SocketChannel channel, long total, long seed, BufferKind kind, int chunk,
            boolean shutdown) throws Exception {
        Random random = new Random(seed);
        CRC32 crc = new CRC32();
        byte[] bytes = new byte[chunk];
        ByteBuffer buffer = kind.allocate(chunk);
        long sent = 0;
        while (sent < total) {
            int n = (int) Math.min(chunk, total - sent);
            random.nextBytes(bytes);
            crc.update(bytes, 0, n);
            buffer.clear();
            buffer.put(bytes, 0, n).flip();
            writeFully(channel, buffer);
            sent += n;
        }
        if (shutdown) {
            channel.shutdownOutput();
        }
        return new Summary(sent, crc.getValue());
    }

    /** Reads until end of stream. */
    static Summary readStream(SocketChannel channel, BufferKind kind, int chunk) throws Exception {
        CRC32 crc = new CRC32();
        ByteBuffer buffer = kind.allocate(chunk);
        byte[] bytes = new byte[chunk];
        long received = 0;
        int n;
        while ((n = channel.read(buffer)) >= 0) {
            buffer.flip();
            buffer.get(bytes, 0, n);
            crc.update(bytes, 0, n);
            received += n;
            buffer.clear();
        }
        return new Summary(received, crc.getValue());
    }
}
