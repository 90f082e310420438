package dev.hadronio.conformance;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertTrue;

import java.io.ByteArrayOutputStream;
import java.nio.ByteBuffer;
import java.util.List;
import org.junit.Test;
import org.junit.runner.RunWith;
import org.junit.runners.Parameterized;
import org.junit.runners.Parameterized.Parameters;

/**
 * Scenario 2: a large message read through a small destination buffer arrives completely and in order;
 * no read returns more than {@code remaining()}, and position and limit move as the JDK moves them.
 */
@RunWith(Parameterized.class)
public class PartialReadTest extends AbstractConformanceTest {

    @Parameters(name = "{0}")
    public static List<Object[]> parameters() {
        return Providers.parameters();
    }

    @Test
    public void oneByteHeapBuffer() throws Exception {
        readThroughSmallBuffer(BufferKind.HEAP, 1, 20_000);
    }

    @Test
    public void oneByteDirectBuffer() throws Exception {
        readThroughSmallBuffer(BufferKind.DIRECT, 1, 20_000);
    }

    @Test
    public void hundredByteHeapBuffer() throws Exception {
        readThroughSmallBuffer(BufferKind.HEAP, 100, 300_000);
    }

    @Test
    public void hundredByteDirectBuffer() throws Exception {
        readThroughSmallBuffer(BufferKind.DIRECT, 100, 300_000);
    }

    @Test
    public void pageHeapBuffer() throws Exception {
        readThroughSmallBuffer(BufferKind.HEAP, 4096, 4 * 1024 * 1024);
    }

    @Test
    public void pageDirectBuffer() throws Exception {
        readThroughSmallBuffer(BufferKind.DIRECT, 4096, 4 * 1024 * 1024);
    }

    @Test
    public void windowInsideHeapBuffer() throws Exception {
        readIntoWindow(BufferKind.HEAP);
    }

    @Test
    public void windowInsideDirectBuffer() throws Exception {
        readIntoWindow(BufferKind.DIRECT);
    }

    /** The peer writes {@code total} bytes in one blocking write and closes; we read with a small buffer. */
    private void readThroughSmallBuffer(BufferKind kind, int capacity, int total) throws Exception {
        byte[] data = randomBytes(capacity, total);
        Pair pair = connectPair();
        Background<Void> writer = background("writer", () -> {
            writeFully(pair.server, ByteBuffer.wrap(data));
            pair.server.close();
            return null;
        });

        ByteBuffer buffer = kind.allocate(capacity);
        ByteArrayOutputStream received = new ByteArrayOutputStream(total);
        int reads = 0;
        while (true) {
            buffer.clear();
            int n = pair.client.read(buffer);
            if (n < 0) {
                break;
            }
            reads++;
            assertTrue("a blocking read() returns 1.." + capacity + " but returned " + n, n > 0 && n <= capacity);
            assertEquals("position after read()", n, buffer.position());
            assertEquals("limit after read()", capacity, buffer.limit());
            buffer.flip();
            for (int i = 0; i < n; i++) {
                received.write(buffer.get());
            }
        }
        writer.join();
        assertTrue("at least total / capacity reads", reads >= (total + capacity - 1) / capacity);
        assertBytesEqual("data read through a " + capacity + "-byte buffer", data, received.toByteArray());
    }

    /**
     * Reads into bytes [50, 150) of a 300-byte buffer: each read returns at most 100 bytes, moves position
     * by the count, keeps the limit and leaves the bytes outside the window alone.
     */
    private void readIntoWindow(BufferKind kind) throws Exception {
        int total = 100_000;
        byte[] data = randomBytes(7, total);
        Pair pair = connectPair();
        Background<Void> writer = background("writer", () -> {
            writeFully(pair.server, ByteBuffer.wrap(data));
            pair.server.close();
            return null;
        });

        ByteBuffer buffer = kind.allocate(300);
        ByteArrayOutputStream received = new ByteArrayOutputStream(total);
        while (true) {
            buffer.clear();
            for (int i = 0; i < buffer.capacity(); i++) {
                buffer.put(i, (byte) 0x55);
            }
            buffer.limit(150).position(50);
            int n = pair.client.read(buffer);
            if (n < 0) {
                break;
            }
            assertTrue("read() into a 100-byte window returned " + n, n > 0 && n <= 100);
            assertEquals("position after read()", 50 + n, buffer.position());
            assertEquals("limit after read()", 150, buffer.limit());
            buffer.clear();
            for (int i = 0; i < buffer.capacity(); i++) {
                if (i < 50 || i >= 50 + n) {
                    assertEquals("byte " + i + " outside the bytes read", (byte) 0x55, buffer.get(i));
                } else {
                    received.write(buffer.get(i));
                }
            }
        }
        writer.join();
        assertBytesEqual("data read into a window", data, received.toByteArray());
    }
}
