package dev.hadronio.conformance;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertTrue;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.util.List;
import java.util.Random;
import org.junit.Test;
import org.junit.runner.RunWith;
import org.junit.runners.Parameterized;
import org.junit.runners.Parameterized.Parameters;

/**
 * Scenario 7: gathering writes and scattering reads with offset/length sub-ranges, heap and direct
 * buffers mixed, empty buffers in between, up to 1024 buffers; buffers outside the range are untouched;
 * an illegal range throws {@link IndexOutOfBoundsException}.
 */
@RunWith(Parameterized.class)
public class ScatterGatherTest extends AbstractConformanceTest {

    @Parameters(name = "{0}")
    public static List<Object[]> parameters() {
        return Providers.parameters();
    }

    @Test
    public void gatheringWriteOfSubRange() throws Exception {
        gatherThenScatter(16, 3, 10, 1000, 20);
    }

    @Test
    public void gatheringWriteOf1024Buffers() throws Exception {
        gatherThenScatter(1024, 0, 1024, 100, 21);
    }

    @Test
    public void gatheringWriteOfLargeBuffers() throws Exception {
        gatherThenScatter(40, 5, 30, 256 * 1024, 22);
    }

    /**
     * Heap buffers pass through a staging buffer of 1 MiB per thread (as with the JDK): a heap
     * buffer larger than that, with a direct buffer after it, must still go out in order, its rest
     * before the direct buffer's bytes; blocking and non-blocking.
     */
    @Test
    public void gatheringWriteOfHeapBufferLargerThanStaging() throws Exception {
        gather(beyondStaging(), 0, 4, new Random(26));
    }

    @Test
    public void nonBlockingGatheringWritesTakeBuffersInOrder() throws Exception {
        Random random = new Random(27);
        ByteBuffer[] buffers = beyondStaging();
        byte[] data = fill(buffers, 0, buffers.length, random);
        Pair pair = connectPair();
        Background<byte[]> reader = background("reader", () -> readExactly(pair.server, data.length));
        pair.client.configureBlocking(false);
        long total = 0;
        while (total < data.length) {
            long n = pair.client.write(buffers);
            assertTrue("non-blocking gathering write() returned " + n, n >= 0 && n <= data.length - total);
            total += n;
            assertFilledInOrder(buffers, 0, buffers.length, total);
            if (n == 0) {
                Thread.sleep(1);
            }
        }
        assertBytesEqual("gathered bytes", data, reader.join());
    }

    @Test
    public void scatteringReadIntoHeapBufferLargerThanStaging() throws Exception {
        scatter(beyondStaging(), 0, 4, 28);
    }

    @Test
    public void scatteringReadOfSubRange() throws Exception {
        scatter(16, 2, 11, 500, 23);
    }

    @Test
    public void scatteringReadInto1024Buffers() throws Exception {
        scatter(1024, 0, 1024, 64, 24);
    }

    @Test
    public void scatteringReadOfLargeBuffers() throws Exception {
        scatter(40, 7, 25, 128 * 1024, 25);
    }

    @Test
    public void zeroLengthRangeTransfersNothing() throws Exception {
        Pair pair = connectPair();
        ByteBuffer[] buffers = {ByteBuffer.allocate(10), ByteBuffer.allocateDirect(10)};
        assertEquals("gathering write of no buffers", 0L, pair.client.write(buffers, 1, 0));
        assertEquals("gathering write of empty buffers", 0L,
                pair.client.write(new ByteBuffer[] {ByteBuffer.allocate(0), ByteBuffer.allocateDirect(0)}));
        assertEquals("scattering read into no buffers", 0L, pair.client.read(buffers, 2, 0));
        assertEquals("scattering read into full buffers", 0L,
                pair.client.read(new ByteBuffer[] {ByteBuffer.allocate(0), ByteBuffer.allocateDirect(0)}));
        assertEquals(0, buffers[0].position());
        assertEquals(0, buffers[1].position());
    }

    @Test
    public void illegalRangesThrowIndexOutOfBounds() throws Exception {
        Pair pair = connectPair();
        ByteBuffer[] buffers = {ByteBuffer.allocate(10), ByteBuffer.allocate(10), ByteBuffer.allocateDirect(10)};
        int[][] ranges = {
            {-1, 1}, {0, -1}, {0, 4}, {2, 2}, {4, 0}, {3, 1}, {Integer.MAX_VALUE, 1}, {1, Integer.MAX_VALUE}
        };
        for (int[] range : ranges) {
            assertThrowsExactly(IndexOutOfBoundsException.class,
                    () -> pair.client.write(buffers, range[0], range[1]));
            assertThrowsExactly(IndexOutOfBoundsException.class,
                    () -> pair.client.read(buffers, range[0], range[1]));
        }
        for (ByteBuffer buffer : buffers) {
            assertEquals("no buffer touched", 0, buffer.position());
        }
        pair.client.write(ByteBuffer.wrap(new byte[] {5}));
        assertEquals("the channel still works", 5, readExactly(pair.server, 1)[0]);
    }

    /**
     * Writes {@code buffers[offset, offset + length)} of an array of {@code count} mixed buffers with one
     * blocking gathering write while the peer reads; checks the bytes, the count and the untouched buffers.
     */
    private void gatherThenScatter(int count, int offset, int length, int maxSize, long seed) throws Exception {
        Random random = new Random(seed);
        gather(mixedBuffers(count, maxSize, random), offset, length, random);
    }

    /** Fills every buffer with random bytes (flipped for writing); returns those of the range, in order. */
    private static byte[] fill(ByteBuffer[] buffers, int offset, int length, Random random) throws IOException {
        ByteArrayOutputStream expected = new ByteArrayOutputStream();
        for (int i = 0; i < buffers.length; i++) {
            byte[] content = randomBytes(random.nextLong(), buffers[i].capacity());
            buffers[i].put(content).flip();
            if (i >= offset && i < offset + length) {
                expected.write(content);
            }
        }
        return expected.toByteArray();
    }

    private void gather(ByteBuffer[] buffers, int offset, int length, Random random) throws Exception {
        int count = buffers.length;
        byte[] data = fill(buffers, offset, length, random);
        Pair pair = connectPair();
        Background<byte[]> reader = background("reader", () -> readExactly(pair.server, data.length));

        long written = pair.client.write(buffers, offset, length);

        assertEquals("a blocking gathering write() writes everything", data.length, written);
        for (int i = 0; i < count; i++) {
            boolean inRange = i >= offset && i < offset + length;
            assertEquals("position of buffer " + i, inRange ? buffers[i].limit() : 0, buffers[i].position());
        }
        assertBytesEqual("gathered bytes", data, reader.join());
    }

    /**
     * The peer writes exactly what fits into {@code buffers[offset, offset + length)}; reads with
     * scattering reads until all arrived, checking after each read that the buffers fill in order.
     */
    private void scatter(int count, int offset, int length, int maxSize, long seed) throws Exception {
        scatter(mixedBuffers(count, maxSize, new Random(seed)), offset, length, seed);
    }

    private void scatter(ByteBuffer[] buffers, int offset, int length, long seed) throws Exception {
        int count = buffers.length;
        int capacity = 0;
        for (int i = offset; i < offset + length; i++) {
            capacity += buffers[i].capacity();
        }
        byte[] data = randomBytes(seed, capacity);
        Pair pair = connectPair();
        Background<Void> writer = background("writer", () -> {
            writeFully(pair.server, ByteBuffer.wrap(data));
            return null;
        });

        long total = 0;
        while (total < capacity) {
            long n = pair.client.read(buffers, offset, length);
            assertTrue("scattering read() returned " + n + " with " + (capacity - total) + " bytes to go",
                    n > 0 && n <= capacity - total);
            total += n;
            assertFilledInOrder(buffers, offset, length, total);
        }
        writer.join();
        for (int i = 0; i < count; i++) {
            if (i < offset || i >= offset + length) {
                assertEquals("buffer " + i + " outside the range is untouched", 0, buffers[i].position());
            }
        }
        ByteArrayOutputStream received = new ByteArrayOutputStream();
        for (int i = offset; i < offset + length; i++) {
            ByteBuffer buffer = buffers[i];
            buffer.flip();
            byte[] bytes = new byte[buffer.remaining()];
            buffer.get(bytes);
            received.write(bytes);
        }
        assertBytesEqual("scattered bytes", data, received.toByteArray());
    }

    /** In {@code [offset, offset + length)}: full buffers, at most one partly filled, then empty ones. */
    private static void assertFilledInOrder(ByteBuffer[] buffers, int offset, int length, long total) {
        long sum = 0;
        boolean partial = false;
        for (int i = offset; i < offset + length; i++) {
            ByteBuffer buffer = buffers[i];
            sum += buffer.position();
            if (partial) {
                assertEquals("buffer " + i + " after a partly filled one is empty", 0, buffer.position());
            } else if (buffer.hasRemaining()) {
                partial = true;
            }
        }
        assertEquals("bytes in buffers", total, sum);
    }

    /** Heap buffers of 1.5 MiB with direct buffers after them. */
    private static ByteBuffer[] beyondStaging() {
        return new ByteBuffer[] {
            ByteBuffer.allocate(1536 * 1024), ByteBuffer.allocateDirect(64 * 1024),
            ByteBuffer.allocate(1536 * 1024), ByteBuffer.allocateDirect(256 * 1024)
        };
    }

    /** {@code count} buffers alternating heap and direct at random, sizes 0..maxSize (about 1 in 8 empty). */
    static ByteBuffer[] mixedBuffers(int count, int maxSize, Random random) {
        ByteBuffer[] buffers = new ByteBuffer[count];
        for (int i = 0; i < count; i++) {
            int size = random.nextInt(8) == 0 ? 0 : 1 + random.nextInt(maxSize);
            buffers[i] = random.nextBoolean() ? ByteBuffer.allocate(size) : ByteBuffer.allocateDirect(size);
        }
        return buffers;
    }
}
