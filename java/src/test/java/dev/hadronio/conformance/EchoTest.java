package dev.hadronio.conformance;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertNotEquals;

import java.nio.ByteBuffer;
import java.nio.channels.SocketChannel;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import org.junit.Test;
import org.junit.runner.RunWith;
import org.junit.runners.Parameterized;
import org.junit.runners.Parameterized.Parameter;
import org.junit.runners.Parameterized.Parameters;

/**
 * Scenario 1: seeded random data of many sizes goes through an echo server and back, written and read in
 * chunks of varying sizes, through heap or direct buffers on both sides. Sizes up to 64 KiB are written
 * completely and then read in one thread; larger ones have the client's writer and reader in separate
 * threads (a single-threaded write-everything-then-read would deadlock once transport buffers fill).
 */
@RunWith(Parameterized.class)
public class EchoTest extends AbstractConformanceTest {

    static final int MIB = 1024 * 1024;
    static final int[] SIZES = {
        1, 7, 64, 1000, 4095, 4096, 16383, 16384, 16385, 65536, 100000, MIB, 16 * MIB
    };
    /** Above this, the client's writer and reader run concurrently. */
    static final int SINGLE_THREAD_LIMIT = 64 * 1024;
    static final int[] CHUNK_SIZES = {1, 7, 100, 1000, 4096, 16385, 65536, MIB};

    @Parameters(name = "{0} {1} {2}")
    public static List<Object[]> parameters() {
        List<Object[]> rows = new ArrayList<>();
        for (Providers.Target provider : Providers.all()) {
            for (BufferKind kind : BufferKind.values()) {
                for (int size : SIZES) {
                    rows.add(new Object[] {provider, kind, size});
                }
            }
        }
        return rows;
    }

    @Parameter(1)
    public BufferKind kind;

    @Parameter(2)
    public int size;

    @Test
    public void echo() throws Exception {
        byte[] data = randomBytes(size * 31L + kind.ordinal(), size);
        Pair pair = connectPair();
        Background<Long> echo = startEcho(pair.server, kind, echoBufferSize());

        byte[] received;
        if (size <= SINGLE_THREAD_LIMIT) {
            writeInChunks(pair.client, data);
            pair.client.shutdownOutput();
            received = readInChunks(pair.client, size);
        } else {
            Background<Void> writer = background("writer", () -> {
                writeInChunks(pair.client, data);
                pair.client.shutdownOutput();
                return null;
            });
            received = readInChunks(pair.client, size);
            writer.join();
        }

        assertEquals("bytes echoed by the server", size, (long) echo.join());
        assertEquals("received length", size, received.length);
        assertEquals("CRC32 of the echo", crc(data), crc(received));
        assertBytesEqual("echo", data, received);
    }

    /** The echo server's buffer size: varies with the size, small ones only for small messages. */
    private int echoBufferSize() {
        int[] choices = size <= SINGLE_THREAD_LIMIT ? new int[] {100, 4096, 65536} : new int[] {4096, 65536, MIB};
        return choices[size % choices.length];
    }

    /** Writes {@code data} in chunks of sizes from {@link #CHUNK_SIZES}, chosen by a seeded random. */
    private void writeInChunks(SocketChannel channel, byte[] data) throws Exception {
        Random random = new Random(data.length);
        ByteBuffer direct = kind == BufferKind.DIRECT ? ByteBuffer.allocateDirect(Math.min(MIB, data.length)) : null;
        int offset = 0;
        while (offset < data.length) {
            int chunk = Math.min(CHUNK_SIZES[random.nextInt(CHUNK_SIZES.length)], data.length - offset);
            ByteBuffer source;
            if (direct == null) {
                source = ByteBuffer.wrap(data, offset, chunk);
            } else {
                direct.clear();
                direct.put(data, offset, chunk).flip();
                source = direct;
            }
            int written = channel.write(source);
            assertEquals("a blocking write() writes everything", chunk, written);
            assertEquals("remaining after a blocking write()", 0, source.remaining());
            offset += chunk;
        }
    }

    /** Reads until end of stream with read sizes chosen by a seeded random; expects {@code expected} bytes. */
    private byte[] readInChunks(SocketChannel channel, int expected) throws Exception {
        Random random = new Random(expected + 1L);
        byte[] received = new byte[expected];
        ByteBuffer buffer = kind.allocate(64 * 1024);
        int total = 0;
        while (true) {
            buffer.clear();
            int want = random.nextBoolean() ? buffer.capacity() : 1 + random.nextInt(buffer.capacity());
            buffer.limit(want);
            int n = channel.read(buffer);
            if (n < 0) {
                break;
            }
            assertNotEquals("a blocking read() with space in the buffer never returns 0", 0, n);
            assertEquals("position after read() returned " + n, n, buffer.position());
            if (total + n > expected) {
                throw new AssertionError("received more than the " + expected + " bytes sent");
            }
            buffer.flip();
            buffer.get(received, total, n);
            total += n;
        }
        assertEquals("bytes before end of stream", expected, total);
        return received;
    }
}
