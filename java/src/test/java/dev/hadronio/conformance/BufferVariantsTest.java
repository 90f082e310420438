package dev.hadronio.conformance;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertTrue;

import java.nio.ByteBuffer;
import java.util.Arrays;
import java.util.List;
import org.junit.Test;
import org.junit.runner.RunWith;
import org.junit.runners.Parameterized;
import org.junit.runners.Parameterized.Parameters;

/**
 * Scenario 8: buffer variants. Read-only sources, sources and destinations with a non-zero position and
 * a limit below the capacity, slices with an array offset, direct slices, empty buffers, and a read-only
 * destination (rejected). Only the bytes between position and limit move; position moves by the count.
 */
@RunWith(Parameterized.class)
public class BufferVariantsTest extends AbstractConformanceTest {

    @Parameters(name = "{0}")
    public static List<Object[]> parameters() {
        return Providers.parameters();
    }

    @Test
    public void readOnlyHeapSource() throws Exception {
        byte[] data = randomBytes(30, 50_000);
        writeAndCheck(ByteBuffer.wrap(data).asReadOnlyBuffer(), data);
    }

    @Test
    public void readOnlyDirectSource() throws Exception {
        byte[] data = randomBytes(31, 50_000);
        ByteBuffer direct = ByteBuffer.allocateDirect(data.length);
        direct.put(data).flip();
        writeAndCheck(direct.asReadOnlyBuffer(), data);
    }

    @Test
    public void heapSourceWithPositionAndLimit() throws Exception {
        byte[] data = randomBytes(32, 1000);
        ByteBuffer source = ByteBuffer.wrap(data);
        source.limit(700).position(100);
        writeAndCheck(source, Arrays.copyOfRange(data, 100, 700));
    }

    @Test
    public void directSourceWithPositionAndLimit() throws Exception {
        byte[] data = randomBytes(33, 1000);
        ByteBuffer source = ByteBuffer.allocateDirect(data.length);
        source.put(data).limit(700).position(100);
        writeAndCheck(source, Arrays.copyOfRange(data, 100, 700));
    }

    @Test
    public void heapSliceWithArrayOffset() throws Exception {
        byte[] data = randomBytes(34, 1000);
        ByteBuffer slice = ByteBuffer.wrap(data, 10, 500).slice();
        assertEquals("array offset of the slice", 10, slice.arrayOffset());
        slice.position(5);
        writeAndCheck(slice, Arrays.copyOfRange(data, 15, 510));
    }

    @Test
    public void directSliceAndDuplicate() throws Exception {
        byte[] data = randomBytes(35, 1000);
        ByteBuffer direct = ByteBuffer.allocateDirect(data.length);
        direct.put(data).position(200);
        ByteBuffer slice = direct.slice();
        slice.limit(300);
        writeAndCheck(slice, Arrays.copyOfRange(data, 200, 500));
        ByteBuffer duplicate = direct.duplicate();
        duplicate.position(900);
        writeAndCheck(duplicate, Arrays.copyOfRange(data, 900, 1000));
    }

    @Test
    public void readIntoHeapSliceWithArrayOffset() throws Exception {
        byte[] backing = new byte[400];
        Arrays.fill(backing, (byte) 0x77);
        ByteBuffer slice = ByteBuffer.wrap(backing, 100, 200).slice();
        slice.position(10).limit(110);
        byte[] data = randomBytes(36, 100);
        readAndCheck(slice, data);
        for (int i = 0; i < backing.length; i++) {
            boolean written = i >= 110 && i < 210;
            assertEquals("backing array byte " + i, written ? data[i - 110] : (byte) 0x77, backing[i]);
        }
    }

    @Test
    public void readIntoDirectSlice() throws Exception {
        ByteBuffer direct = ByteBuffer.allocateDirect(400);
        for (int i = 0; i < direct.capacity(); i++) {
            direct.put(i, (byte) 0x77);
        }
        direct.position(100);
        ByteBuffer slice = direct.slice();
        slice.position(10).limit(110);
        byte[] data = randomBytes(37, 100);
        readAndCheck(slice, data);
        for (int i = 0; i < direct.capacity(); i++) {
            boolean written = i >= 110 && i < 210;
            assertEquals("direct byte " + i, written ? data[i - 110] : (byte) 0x77, direct.get(i));
        }
    }

    @Test
    public void emptyBuffersTransferNothingWithoutBlocking() throws Exception {
        Pair pair = connectPair();
        ByteBuffer heap = ByteBuffer.allocate(10);
        heap.position(10);
        ByteBuffer direct = ByteBuffer.allocateDirect(10);
        direct.position(10);
        assertEquals("write of an empty heap buffer", 0, pair.client.write(heap));
        assertEquals("write of an empty direct buffer", 0, pair.client.write(direct));
        assertEquals("blocking read into a full heap buffer", 0, pair.client.read(heap));
        assertEquals("blocking read into a full direct buffer", 0, pair.client.read(direct));
        assertEquals("zero-capacity buffer", 0, pair.client.read(ByteBuffer.allocate(0)));
        pair.client.write(ByteBuffer.wrap(new byte[] {9}));
        assertEquals("the peer got only the one real byte", 9, readExactly(pair.server, 1)[0]);
    }

    @Test
    public void readIntoReadOnlyBufferThrowsIllegalArgument() throws Exception {
        Pair pair = connectPair();
        ByteBuffer heap = ByteBuffer.allocate(10).asReadOnlyBuffer();
        ByteBuffer direct = ByteBuffer.allocateDirect(10).asReadOnlyBuffer();
        assertThrowsExactly(IllegalArgumentException.class, () -> pair.client.read(heap));
        assertThrowsExactly(IllegalArgumentException.class, () -> pair.client.read(direct));
        assertThrowsExactly(IllegalArgumentException.class,
                () -> pair.client.read(new ByteBuffer[] {ByteBuffer.allocate(1), heap}));
        assertTrue("the channel stays open", pair.client.isOpen());
    }

    /**
     * Writes {@code source} with one blocking write, then a marker byte; the peer must read exactly
     * {@code expected} followed by the marker (so no byte outside position..limit was sent).
     */
    private void writeAndCheck(ByteBuffer source, byte[] expected) throws Exception {
        Pair pair = connectPair();
        int limit = source.limit();
        Background<byte[]> reader = background("reader", () -> readExactly(pair.server, expected.length + 1));
        int written = pair.client.write(source);
        assertEquals("bytes written", expected.length, written);
        assertEquals("position after write()", limit, source.position());
        assertEquals("limit after write()", limit, source.limit());
        pair.client.write(ByteBuffer.wrap(new byte[] {(byte) 0xA5}));
        byte[] received = reader.join();
        assertBytesEqual("bytes between position and limit", expected, Arrays.copyOf(received, expected.length));
        assertEquals("marker right after them", (byte) 0xA5, received[expected.length]);
    }

    /** The peer writes {@code data}; it is read into {@code destination} (which has exactly that space). */
    private void readAndCheck(ByteBuffer destination, byte[] data) throws Exception {
        Pair pair = connectPair();
        writeFully(pair.server, ByteBuffer.wrap(data));
        int start = destination.position();
        int limit = destination.limit();
        readFully(pair.client, destination);
        assertEquals("position after reading", start + data.length, destination.position());
        assertEquals("limit after reading", limit, destination.limit());
    }
}
