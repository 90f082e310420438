package dev.hadronio.nio;

import dev.hadronio.internal.Addresses;
import dev.hadronio.internal.Native;
import dev.hadronio.internal.Status;
import dev.hadronio.internal.VirtualThreads;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.nio.channels.SelectionKey;

/**
 * The native connection behind a {@link HadronioSocketChannel}: every native call of one
 * connection, each with the handle borrowed for the call (see {@link NativeHandle}), and a
 * virtual thread's waits between non-blocking calls. The channel keeps the NIO semantics (locks,
 * states, buffers, exceptions for misuse); this class knows nothing of them. Results are the
 * native calls' own: counts, or negative {@link Status} codes for the channel to translate.
 */
final class NativeConnection {
    /** Where a virtual thread waits until the connection may be ready for an operation. */
    interface Parker {
        /**
         * Parks until the connection may be ready for {@code op}; a passed {@code deadline}
         * ({@link System#nanoTime()}, 0 for none) throws {@code SocketTimeoutException}
         * ("{@code what} timed out").
         */
        void park(int op, long deadline, String what) throws IOException;
    }

    private final NativeHandle handle;
    private final Parker parker;

    private NativeConnection(Object owner, long value, Parker parker) {
        this.handle = NativeHandle.connection(owner, value);
        this.parker = parker;
    }

    /** A new unconnected connection of {@code owner} (its channel, which the leak check watches). */
    static NativeConnection open(Object owner, Parker parker) throws IOException {
        return new NativeConnection(owner, Native.connOpen(), parker);
    }

    /** The connection a listener accepted. */
    static NativeConnection accepted(Object owner, long value, Parker parker) {
        return new NativeConnection(owner, value, parker);
    }

    /** Whether a blocking operation of the calling thread parks (a virtual thread's does). */
    static boolean parks(boolean blocking) {
        return blocking && VirtualThreads.current();
    }

    /** {@link System#nanoTime()} after {@code timeoutMillis}, or 0 for none. */
    static long deadline(long timeoutMillis) {
        return timeoutMillis > 0 ? System.nanoTime() + timeoutMillis * 1_000_000L : 0;
    }

    /** The handle for a registration (with a selector or the virtual-thread poller), 0 once destroyed. */
    long handle() {
        return handle.get();
    }

    // --- data ---------------------------------------------------------------------------------

    /** Reads into native memory; a virtual thread reads without blocking and parks while nothing comes. */
    int read(long address, int length, boolean blocking, int timeoutMillis) throws IOException {
        long h = handle.enter();
        try {
            if (!parks(blocking)) {
                return Native.connRead(h, address, length, blocking, timeoutMillis);
            }
            long deadline = deadline(timeoutMillis);
            while (true) {
                int n = Native.connRead(h, address, length, false, 0);
                if (n != 0) {
                    return n;
                }
                parker.park(SelectionKey.OP_READ, deadline, "Read");
            }
        } finally {
            handle.leave();
        }
    }

    /** Reads into an I/O vector of {@code count} regions at {@code iov}; as {@link #read}. */
    long readv(long iov, int count, boolean blocking, int timeoutMillis) throws IOException {
        long h = handle.enter();
        try {
            if (!parks(blocking)) {
                return Native.connReadv(h, iov, count, blocking, timeoutMillis);
            }
            long deadline = deadline(timeoutMillis);
            while (true) {
                long n = Native.connReadv(h, iov, count, false, 0);
                if (n != 0) {
                    return n;
                }
                parker.park(SelectionKey.OP_READ, deadline, "Read");
            }
        } finally {
            handle.leave();
        }
    }

    /**
     * Writes from native memory; a virtual thread writes without blocking and parks while nothing
     * goes, until everything went (a blocking write's promise) or it fails (with the count so
     * far, if any).
     */
    int write(long address, int length, boolean blocking) throws IOException {
        long h = handle.enter();
        try {
            if (!parks(blocking)) {
                return Native.connWrite(h, address, length, blocking);
            }
            int written = 0;
            while (written < length) {
                int n = Native.connWrite(h, address + written, length - written, false);
                if (n < 0) {
                    if (written > 0) {
                        Status.ignore(n);
                        return written;
                    }
                    return n;
                }
                written += n;
                if (n == 0) {
                    parker.park(SelectionKey.OP_WRITE, 0, "Write");
                }
            }
            return written;
        } finally {
            handle.leave();
        }
    }

    /**
     * Writes from an I/O vector of {@code count} regions at {@code iov}, once; a virtual thread
     * that could write nothing parks before it returns (the caller writes again).
     */
    long writev(long iov, int count, boolean blocking) throws IOException {
        boolean parks = parks(blocking);
        long h = handle.enter();
        try {
            long r = Native.connWritev(h, iov, count, blocking && !parks);
            if (r == 0 && parks) {
                parker.park(SelectionKey.OP_WRITE, 0, "Write");
            }
            return r;
        } finally {
            handle.leave();
        }
    }

    // --- connecting ---------------------------------------------------------------------------

    void bind(InetSocketAddress address) throws IOException {
        Native.connBind(handle.get(), Addresses.ip(address), Addresses.scope(address), address.getPort());
    }

    /**
     * Connects to {@code address}: 1 if connected, 0 if pending (non-blocking), or a negative
     * status. {@code timeoutMillis > 0} bounds a blocking connect; a virtual thread parks until
     * the connection is done.
     */
    int connect(InetSocketAddress address, boolean blocking, int timeoutMillis) throws IOException {
        boolean parks = parks(blocking);
        long h = handle.enter();
        try {
            int r = Native.connConnect(h, Addresses.ip(address), Addresses.scope(address), address.getPort(),
                blocking && !parks, timeoutMillis);
            return r == 0 && parks ? finishParked(h, deadline(timeoutMillis)) : r;
        } finally {
            handle.leave();
        }
    }

    /** Completes a pending connect: 1 if connected, 0 if still pending (non-blocking). */
    int finishConnect(boolean blocking) throws IOException {
        long h = handle.enter();
        try {
            return parks(blocking) ? finishParked(h, 0) : Native.connFinishConnect(h, blocking);
        } finally {
            handle.leave();
        }
    }

    /** Completes a pending connect on a virtual thread: parks until it is done or fails. */
    private int finishParked(long h, long deadline) throws IOException {
        while (true) {
            parker.park(SelectionKey.OP_CONNECT, deadline, "Connect");
            int r = Native.connFinishConnect(h, false);
            if (r != 0 || handle.retired()) {
                return r;
            }
        }
    }

    InetSocketAddress localAddress() {
        return Addresses.decode(Native.connLocalAddress(handle.get()));
    }

    InetSocketAddress remoteAddress() {
        return Addresses.decode(Native.connRemoteAddress(handle.get()));
    }

    // --- the rest -----------------------------------------------------------------------------

    void shutdown(boolean input, boolean output) throws IOException {
        Native.connShutdown(handle.get(), input, output);
    }

    /**
     * Closes the connection and wakes the threads blocked in it; the handle is destroyed when the
     * last of them has left.
     */
    void close() throws IOException {
        Native.connClose(handle.get());
        handle.retire();
    }

    void setOption(int option, int value) throws IOException {
        Native.connSetOption(handle.get(), option, value);
    }

    int getOption(int option) throws IOException {
        return Native.connGetOption(handle.get(), option);
    }

    /** Which path the data takes, and UCX's description of the endpoint when upgraded. */
    String describe() throws IOException {
        return Native.connDescribe(handle.get());
    }
}
