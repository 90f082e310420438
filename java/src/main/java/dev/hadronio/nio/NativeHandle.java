package dev.hadronio.nio;

import dev.hadronio.internal.Native;
import java.lang.System.Logger;
import java.lang.System.Logger.Level;
import java.lang.ref.Cleaner;

/**
 * Owner of one native handle. {@link #release()} destroys it exactly once; if the owning object
 * becomes unreachable without having been closed, a {@link Cleaner} logs the leak and releases
 * the native resources.
 */
final class NativeHandle {
    private static final Logger LOG = System.getLogger("dev.hadronio");
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
                LOG.log(Level.WARNING, "a hadroNIO " + description + " was garbage-collected without being closed");
                destroy(kind, h);
            }
        }
    }

    private final Leak leak;
    private final Cleaner.Cleanable cleanable;

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

    /** Destroys the native object; later calls do nothing. Callers serialise with its users. */
    void release() {
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
