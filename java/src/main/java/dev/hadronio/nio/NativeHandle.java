package dev.hadronio.nio;

import dev.hadronio.internal.Log;
import dev.hadronio.internal.Native;
import java.lang.System.Logger.Level;
import java.lang.ref.Cleaner;
import java.nio.channels.ClosedChannelException;
import java.util.concurrent.atomic.AtomicIntegerFieldUpdater;

/**
 * Owner of one native handle. Native calls borrow it ({@link #enter}, then {@link #leave} in a
 * {@code finally} block); {@link #retire()} refuses new borrows and destroys the handle once the last
 * borrower has left, so a channel closed while a thread is blocked in it never frees memory that
 * thread still uses. If the owning object becomes unreachable without having been closed, a
 * {@link Cleaner} logs the leak and releases the native resources.
 */
final class NativeHandle {
    private static final Cleaner CLEANER = Cleaner.create();

    private static final int CONNECTION = 0;
    private static final int LISTENER = 1;
    private static final int SELECTOR = 2;

    private static final class Leak implements Runnable {
        private final int kind;
        private final String description;
        volatile long value;

        Leak(int kind, String description, long value) {
            this.kind = kind;
            this.description = description;
            this.value = value;
        }

        @Override
        public void run() {
            long h = value;
            if (h != 0) {
                value = 0;
                Log.logger().log(Level.WARNING, "a hadroNIO " + description + " was garbage-collected without being closed");
                destroy(kind, h);
            }
        }
    }

    /** Set in {@link #state} once retired; the bits below count the threads inside a call. */
    private static final int RETIRED = 1 << 31;
    /**
     * An updater rather than a {@code VarHandle}: a channel's first read or write then links no
     * method handles (milliseconds on the application's thread in a JVM that just started).
     */
    private static final AtomicIntegerFieldUpdater<NativeHandle> STATE =
        AtomicIntegerFieldUpdater.newUpdater(NativeHandle.class, "state");

    private final Leak leak;
    private final Cleaner.Cleanable cleanable;
    /**
     * {@link #RETIRED} and the number of borrowers, changed atomically: one atomic instruction to
     * enter and one to leave, since every read and write of a channel passes here.
     */
    private volatile int state;

    private NativeHandle(Object owner, int kind, String description, long value) {
        this.leak = new Leak(kind, description, value);
        this.cleanable = CLEANER.register(owner, leak);
    }

    static NativeHandle connection(Object owner, long value) {
        return new NativeHandle(owner, CONNECTION, "socket channel", value);
    }

    static NativeHandle listener(Object owner, long value) {
        return new NativeHandle(owner, LISTENER, "server socket channel", value);
    }

    static NativeHandle selector(Object owner, long value) {
        return new NativeHandle(owner, SELECTOR, "selector", value);
    }

    /** The handle, 0 once released. */
    long get() {
        return leak.value;
    }

    /** Whether {@link #retire()} was called (the owner closed). */
    boolean retired() {
        return (state & RETIRED) != 0;
    }

    /**
     * Starts a native call: the handle returned stays valid until {@link #leave()}, even if it is
     * retired meanwhile; {@link ClosedChannelException} once retired.
     */
    long enter() throws ClosedChannelException {
        while (true) {
            int current = state;
            if ((current & RETIRED) != 0) {
                throw new ClosedChannelException();
            }
            if (STATE.compareAndSet(this, current, current + 1)) {
                return leak.value;
            }
        }
    }

    /** Ends a call started by {@link #enter()}; the last one out of a retired handle destroys it. */
    void leave() {
        int before = STATE.getAndDecrement(this);
        if (before == (RETIRED | 1)) {
            release();
        }
    }

    /**
     * No new calls from now on: destroys the handle now if no call is running, else when the last
     * one leaves. The owner closes the native object first (which ends blocked calls).
     */
    void retire() {
        int before;
        do {
            before = state;
        } while (!STATE.compareAndSet(this, before, before | RETIRED));
        if (before == 0) {
            release();
        }
    }

    /** Destroys the native object; later calls do nothing. */
    private void release() {
        long h = leak.value;
        leak.value = 0;
        if (h != 0) {
            destroy(leak.kind, h);
        }
        cleanable.clean();
    }

    private static void destroy(int kind, long h) {
        switch (kind) {
            case CONNECTION:
                Native.connDestroy(h);
                break;
            case LISTENER:
                Native.listenerDestroy(h);
                break;
            default:
                Native.selectorClose(h);
                Native.selectorDestroy(h);
                break;
        }
    }
}
