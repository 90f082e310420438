package dev.hadronio.internal;

import java.lang.invoke.MethodHandle;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.MethodType;
import java.lang.ref.WeakReference;
import java.nio.Buffer;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;

/**
 * Native addresses of direct buffers, per-thread temporary direct buffers for heap data (as the
 * JDK does), and the per-thread I/O vector of scattering and gathering calls.
 */
public final class Buffers {
    /**
     * Whether {@link Fast} is ready: set by {@link #prepare} once it initialised that class.
     * Until then, and where it found no way, the native library gives the addresses. Finding the
     * way builds method handles, which costs milliseconds in a JVM that just started: the
     * application's first read or write must not wait for that.
     */
    private static volatile boolean fast;

    /**
     * The ways to a direct buffer's address without a native call, found when this class is
     * initialised.
     */
    private static final class Fast {
        /**
         * {@code (Buffer) -> long}: the address of a direct buffer's position, through
         * {@code MemorySegment.ofBuffer(buffer).address()} (JDK 22 and later; found by name, as the
         * library is compiled for Java 11); null on older JDKs.
         */
        static final MethodHandle SEGMENT_ADDRESS = segmentAddress();

        /**
         * {@code (Object, long) -> long}: {@code sun.misc.Unsafe.getLong} bound to the instance,
         * and the offset of {@code java.nio.Buffer}'s {@code address} field, which holds a direct
         * buffer's first byte (what the JNI function {@code GetDirectBufferAddress} returns): the
         * way on JDKs before 22, where {@code sun.misc.Unsafe} is open to every module. Null and -1
         * where either cannot be found.
         */
        static final MethodHandle UNSAFE_GET_LONG;
        static final long ADDRESS_OFFSET;

        static {
            MethodHandle getLong = null;
            long offset = -1;
            if (SEGMENT_ADDRESS == null) {
                try {
                    Class<?> unsafeClass = Class.forName("sun.misc.Unsafe");
                    java.lang.reflect.Field instance = unsafeClass.getDeclaredField("theUnsafe");
                    instance.setAccessible(true);
                    Object unsafe = instance.get(null);
                    MethodHandles.Lookup lookup = MethodHandles.publicLookup();
                    MethodHandle fieldOffset = lookup.findVirtual(unsafeClass, "objectFieldOffset",
                        MethodType.methodType(long.class, java.lang.reflect.Field.class));
                    offset = (long) fieldOffset.invoke(unsafe, Buffer.class.getDeclaredField("address"));
                    getLong = lookup.findVirtual(unsafeClass, "getLong", MethodType.methodType(long.class, Object.class, long.class))
                        .bindTo(unsafe);
                    // The field must hold the address of the buffer's first byte, slices included:
                    // bytes written through the buffer are read back from that address.
                    MethodHandle getAbsolute = lookup.findVirtual(unsafeClass, "getLong", MethodType.methodType(long.class, long.class))
                        .bindTo(unsafe);
                    ByteBuffer probe = ByteBuffer.allocateDirect(32).order(ByteOrder.nativeOrder());
                    ByteBuffer slice = probe.position(8).slice().order(ByteOrder.nativeOrder());
                    slice.putLong(0, 0x0123456789abcdefL);
                    long address = (long) getLong.invoke((Object) slice, offset);
                    if ((long) getAbsolute.invoke(address) != 0x0123456789abcdefL) {
                        throw new IllegalStateException("java.nio.Buffer.address does not hold the buffer's address");
                    }
                } catch (Throwable e) {
                    getLong = null;
                    offset = -1;
                }
            }
            UNSAFE_GET_LONG = getLong;
            ADDRESS_OFFSET = offset;
        }

        private Fast() {
        }

        private static MethodHandle segmentAddress() {
            if (Runtime.version().feature() < 22) {
                return null;
            }
            try {
                Class<?> segment = Class.forName("java.lang.foreign.MemorySegment");
                MethodHandles.Lookup lookup = MethodHandles.publicLookup();
                MethodHandle ofBuffer = lookup.findStatic(segment, "ofBuffer", MethodType.methodType(segment, Buffer.class));
                MethodHandle address = lookup.findVirtual(segment, "address", MethodType.methodType(long.class));
                return MethodHandles.filterReturnValue(ofBuffer, address);
            } catch (ReflectiveOperationException | RuntimeException e) {
                return null;
            }
        }

        /** Whether a way was found. */
        static boolean found() {
            return SEGMENT_ADDRESS != null || UNSAFE_GET_LONG != null;
        }

        /** The address of a direct buffer's first byte; only where {@link #found}. */
        static long address(ByteBuffer direct) {
            try {
                MethodHandle segmentAddress = SEGMENT_ADDRESS;
                if (segmentAddress != null) {
                    return (long) segmentAddress.invokeExact((Buffer) direct) - direct.position();
                }
                return (long) UNSAFE_GET_LONG.invokeExact((Object) direct, ADDRESS_OFFSET);
            } catch (Throwable e) {
                throw new IllegalStateException("cannot read a direct buffer's address", e);
            }
        }
    }

    /**
     * Finds the way to addresses without a native call (on the {@code hadronio-start} thread,
     * right after the library loaded); from then on {@link #address} takes it. Returns whether
     * there is one.
     */
    static boolean prepare() {
        try {
            fast = Fast.found();
        } catch (LinkageError e) {
            // The JDK refused every way: addresses keep coming from the native library.
        }
        return fast;
    }

    /** This thread's last direct buffer and its address: most applications reuse their buffers. */
    private static final class Last {
        WeakReference<ByteBuffer> buffer = new WeakReference<>(null);
        long address;
    }

    // Subclasses rather than ThreadLocal.withInitial: a method reference's first use costs a
    // JVM that never bootstrapped one milliseconds, on the application's first read or write.
    private static final ThreadLocal<Last> LAST = new ThreadLocal<Last>() {
        @Override
        protected Last initialValue() {
            return new Last();
        }
    };

    private static final ThreadLocal<ByteBuffer> TEMPORARY = new ThreadLocal<>();
    /** The smallest temporary buffer. */
    private static final int TEMPORARY_MIN = 512;
    private static final ThreadLocal<IoVector> VECTORS = new ThreadLocal<IoVector>() {
        @Override
        protected IoVector initialValue() {
            return new IoVector();
        }
    };

    private Buffers() {
    }

    /** The native address of a direct buffer's first byte (not of its position). */
    public static long address(ByteBuffer direct) {
        if (!direct.isDirect()) {
            // A heap buffer has no native address (its segment's and its field's are offsets).
            throw new IllegalArgumentException("not a direct buffer: " + direct);
        }
        return fast ? Fast.address(direct) : nativeAddress(direct);
    }

    /** {@link #address} through the native library, for this thread's last buffer once. */
    static long nativeAddress(ByteBuffer direct) {
        Last last = LAST.get();
        if (last.buffer.get() != direct) {
            last.address = Native.bufferAddress(direct);
            last.buffer = new WeakReference<>(direct);
        }
        return last.address;
    }

    /**
     * A direct buffer of this thread with at least {@code min(length, TEMPORARY_BUFFER_LIMIT)}
     * bytes, position 0. Valid until the thread's next call. It grows in powers of two from what
     * the thread asked for: a thread-per-connection server's thousands of threads that read a few
     * bytes into heap buffers keep that much native memory each, not more.
     */
    public static ByteBuffer temporary(int length) {
        int wanted = Math.min(length, Config.TEMPORARY_BUFFER_LIMIT);
        ByteBuffer buffer = TEMPORARY.get();
        if (buffer == null || buffer.capacity() < wanted) {
            int capacity = Math.max(wanted, TEMPORARY_MIN);
            capacity = Math.min(Integer.highestOneBit(capacity - 1) << 1, Config.TEMPORARY_BUFFER_LIMIT);
            buffer = ByteBuffer.allocateDirect(Math.max(capacity, wanted));
            TEMPORARY.set(buffer);
        }
        buffer.clear();
        return buffer;
    }

    public static IoVector vector() {
        return VECTORS.get();
    }

    /**
     * A list of up to {@link #MAX} {@code (address, length)} pairs in native memory, plus where
     * each pair came from so that results can be applied to the buffers afterwards.
     */
    public static final class IoVector {
        public static final int MAX = 1024;
        private final ByteBuffer pairs = ByteBuffer.allocateDirect(MAX * 16).order(ByteOrder.nativeOrder());
        private final long pairsAddress = Buffers.address(pairs);
        private final int[] bufferIndex = new int[MAX];
        private final int[] length = new int[MAX];
        private final int[] temporaryOffset = new int[MAX];
        private int count;
        private int temporaryUsed;
        private int heapBytes;
        private ByteBuffer temporary;

        /**
         * Empties the vector for {@code buffers[offset, offset + length)}. The remaining bytes of
         * their heap buffers size the thread's temporary buffer, so that a thread whose gathering
         * writes carry a few hundred heap bytes keeps that much native memory, not the limit.
         */
        public void reset(ByteBuffer[] buffers, int offset, int length) {
            count = 0;
            temporaryUsed = 0;
            temporary = null;
            long heap = 0;
            for (int i = offset; i < offset + length && heap < Config.TEMPORARY_BUFFER_LIMIT; i++) {
                if (!buffers[i].isDirect()) {
                    heap += buffers[i].remaining();
                }
            }
            heapBytes = (int) Math.min(heap, Config.TEMPORARY_BUFFER_LIMIT);
        }

        public int count() {
            return count;
        }

        public long address() {
            return pairsAddress;
        }

        public boolean full() {
            return count == MAX;
        }

        /**
         * Adds the remaining bytes of {@code buffer} (index {@code index} of the caller's
         * array); heap buffers go through this thread's temporary buffer. Returns false when no
         * later buffer may follow: no room is left, or the temporary buffer took only part of
         * this one (the bytes of the next buffer must not pass the rest of it).
         */
        public boolean add(ByteBuffer buffer, int index, boolean copyIn) {
            int remaining = buffer.remaining();
            if (remaining == 0 || count == MAX) {
                return count < MAX;
            }
            if (buffer.isDirect()) {
                put(Buffers.address(buffer) + buffer.position(), remaining, index, -1);
                return true;
            }
            if (temporaryUsed >= Config.TEMPORARY_BUFFER_LIMIT) {
                return false;
            }
            if (temporary == null) {
                temporary = Buffers.temporary(heapBytes);
            }
            int take = Math.min(remaining, temporary.capacity() - temporaryUsed);
            if (take == 0) {
                return false;
            }
            if (copyIn) {
                ByteBuffer slice = buffer.duplicate();
                slice.limit(slice.position() + take);
                temporary.position(temporaryUsed);
                temporary.put(slice);
            }
            put(Buffers.address(temporary) + temporaryUsed, take, index, temporaryUsed);
            temporaryUsed += take;
            return take == remaining;
        }

        private void put(long address, int bytes, int index, int offset) {
            pairs.putLong(count * 16, address);
            pairs.putLong(count * 16 + 8, bytes);
            bufferIndex[count] = index;
            length[count] = bytes;
            temporaryOffset[count] = offset;
            count++;
        }

        /**
         * Moves the positions of the buffers by the {@code done} bytes that were transferred,
         * in order; for reads ({@code copyOut}) heap buffers receive their bytes from the
         * temporary buffer.
         */
        public void complete(ByteBuffer[] buffers, long done, boolean copyOut) {
            long left = done;
            for (int i = 0; i < count && left > 0; i++) {
                ByteBuffer buffer = buffers[bufferIndex[i]];
                int bytes = (int) Math.min(left, length[i]);
                if (temporaryOffset[i] >= 0 && copyOut) {
                    ByteBuffer source = temporary.duplicate();
                    source.limit(temporaryOffset[i] + bytes).position(temporaryOffset[i]);
                    buffer.put(source);
                } else {
                    buffer.position(buffer.position() + bytes);
                }
                left -= bytes;
            }
        }
    }
}
