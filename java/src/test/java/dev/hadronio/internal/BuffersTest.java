package dev.hadronio.internal;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertTrue;

import java.nio.ByteBuffer;
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

    @Test(expected = IllegalArgumentException.class)
    public void aHeapBufferHasNoAddress() {
        Buffers.address(ByteBuffer.allocate(16));
    }
}
