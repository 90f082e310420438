package dev.hadronio.internal;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertTrue;

import java.nio.ByteBuffer;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.BeforeClass;
import org.junit.Test;

/**
 * A direct buffer's address, however {@link Buffers#address} finds it on this JDK once it is
 * prepared (a memory segment, {@code sun.misc.Unsafe}), is the one the JNI function
 * {@code GetDirectBufferAddress} gives (and {@code address} asks until then): for buffers, slices,
 * duplicates and read-only views, wherever their position is.
 */
public class BuffersTest {
    @BeforeClass
    public static void load() {
        NativeLoader.load();
        // As the hadronio-start thread does after the load; JDK 17 opens sun.misc.Unsafe to every
        // module, 22 and later have memory segments.
        assertTrue("no way to buffer addresses without a native call on " + Runtime.version(), Buffers.prepare());
    }

    private static void assertSameAddress(ByteBuffer buffer) {
        long expected = Native.bufferAddress(buffer);
        assertEquals(buffer.toString(), expected, Buffers.address(buffer));
        assertEquals(buffer.toString(), expected, Buffers.nativeAddress(buffer));
    }

    @Test
    public void addressesAgreeWithTheNativeLibrary() {
        ByteBuffer buffer = ByteBuffer.allocateDirect(4096);
        assertSameAddress(buffer);
        buffer.position(100);
        assertSameAddress(buffer);
        ByteBuffer slice = buffer.slice();
        assertSameAddress(slice);
        assertEquals(Native.bufferAddress(buffer) + 100, Buffers.address(slice));
        slice.position(17).limit(40);
        assertSameAddress(slice);
        ByteBuffer inner = slice.slice();
        assertEquals(Native.bufferAddress(buffer) + 117, Buffers.address(inner));
        assertSameAddress(inner);
        assertSameAddress(buffer.duplicate());
        assertSameAddress(buffer.asReadOnlyBuffer());
        ByteBuffer empty = ByteBuffer.allocateDirect(0);
        assertSameAddress(empty);
    }

    /**
     * A gathering write's heap buffers go through the thread's temporary buffer, which is as
     * large as their bytes (in powers of two from 512), not the limit: a server that starts
     * threads as it goes would otherwise zero a megabyte for each new thread's first write.
     */
    @Test
    public void aVectorStagesItsHeapBytesInATemporaryBufferOfTheirSize() throws Exception {
        AtomicReference<Throwable> failure = new AtomicReference<>();
        Thread thread = new Thread(() -> {
            try {
                ByteBuffer first = ByteBuffer.allocate(300);
                ByteBuffer direct = ByteBuffer.allocateDirect(4096);
                ByteBuffer second = ByteBuffer.allocate(400);
                for (int i = 0; i < 300; i++) {
                    first.put((byte) i);
                }
                for (int i = 0; i < 400; i++) {
                    second.put((byte) (i * 7));
                }
                first.flip();
                second.flip();
                ByteBuffer[] buffers = {first, direct, second};
                Buffers.IoVector vector = Buffers.vector();
                vector.reset(buffers, 0, buffers.length);
                for (int i = 0; i < buffers.length; i++) {
                    assertTrue("buffer " + i + " fits", vector.add(buffers[i], i, true));
                }
                assertEquals(3, vector.count());
                ByteBuffer temporary = Buffers.temporary(0);
                assertEquals("700 heap bytes", 1024, temporary.capacity());
                for (int i = 0; i < 300; i++) {
                    assertEquals("byte " + i + " of the first", (byte) i, temporary.get(i));
                }
                for (int i = 0; i < 400; i++) {
                    assertEquals("byte " + i + " of the second", (byte) (i * 7), temporary.get(300 + i));
                }

                ByteBuffer[] larger = {ByteBuffer.allocate(5000)};
                vector.reset(larger, 0, 1);
                assertTrue(vector.add(larger[0], 0, false));
                assertEquals("5000 heap bytes", 8192, Buffers.temporary(0).capacity());

                ByteBuffer[] onlyDirect = {direct};
                vector.reset(onlyDirect, 0, 1);
                assertTrue(vector.add(direct, 0, true));
                assertEquals("a direct buffer takes no temporary memory", 8192, Buffers.temporary(0).capacity());
            } catch (Throwable e) {
                failure.set(e);
            }
        });
        thread.start();
        thread.join();
        if (failure.get() != null) {
            throw new AssertionError(failure.get());
        }
    }

    @Test(expected = IllegalArgumentException.class)
    public void aHeapBufferHasNoAddress() {
        Buffers.address(ByteBuffer.allocate(16));
    }
}
