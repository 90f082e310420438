package dev.hadronio.nio;

import dev.hadronio.internal.Buffers;
import dev.hadronio.internal.Native;
import java.lang.System.Logger;
import java.lang.System.Logger.Level;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.concurrent.atomic.AtomicReferenceArray;
import java.util.concurrent.locks.LockSupport;

/**
 * Where virtual threads wait. A blocking operation on a virtual thread does not block inside the
 * native library (that would pin its carrier thread): it runs non-blocking and, if it cannot
 * proceed, parks the virtual thread until its channel is ready. One platform thread selects on a
 * native selector that holds every channel used this way (interest 0 while nobody waits) and
 * unparks the waiters of the channels it finds ready. Channels registered here share that
 * selector's UCX worker, unless they had one already.
 */
final class VirtualPoller implements Runnable {
    private static final Logger LOG = System.getLogger("dev.hadronio");
    /** Ready keys taken per select; more are reported by the next one. */
    private static final int CAPACITY = 256;

    private static volatile VirtualPoller instance;

    private final long selector;
    private final ByteBuffer ready = ByteBuffer.allocateDirect(CAPACITY * 8).order(ByteOrder.nativeOrder());
    private final long readyAddress = Buffers.address(ready);
    private final Object registrationLock = new Object();
    private volatile AtomicReferenceArray<Waits> byIndex = new AtomicReferenceArray<>(64);
    private int[] freeIndexes = new int[64];
    private int freeCount;
    private int nextIndex;

    private VirtualPoller() {
        selector = Native.selectorOpen();
    }

    /** The poller, started on first use. */
    static VirtualPoller get() {
        VirtualPoller poller = instance;
        if (poller != null) {
            return poller;
        }
        synchronized (VirtualPoller.class) {
            if (instance == null) {
                VirtualPoller created = new VirtualPoller();
                Thread thread = new Thread(created, "hadronio-virtual-thread-poller");
                thread.setDaemon(true);
                thread.start();
                instance = created;
            }
            return instance;
        }
    }

    /**
     * Registers a channel's native handle (call under the channel's state lock, so that it is not
     * closed meanwhile); its waits are armed and fired through the returned object.
     */
    Waits register(long channel, boolean listener) {
        Waits waits;
        synchronized (registrationLock) {
            int index = freeCount > 0 ? freeIndexes[--freeCount] : nextIndex++;
            AtomicReferenceArray<Waits> table = byIndex;
            if (index >= table.length()) {
                AtomicReferenceArray<Waits> grown = new AtomicReferenceArray<>(table.length() * 2);
                for (int i = 0; i < table.length(); i++) {
                    grown.set(i, table.get(i));
                }
                byIndex = grown;
                table = grown;
            }
            waits = new Waits(this, index);
            table.set(index, waits);
        }
        try {
            waits.key = Native.keyRegister(selector, channel, listener, waits.index, 0);
        } catch (Throwable e) {
            release(waits.index);
            throw e;
        }
        return waits;
    }

    private void release(int index) {
        synchronized (registrationLock) {
            byIndex.set(index, null);
            if (freeCount == freeIndexes.length) {
                int[] grown = new int[freeIndexes.length * 2];
                System.arraycopy(freeIndexes, 0, grown, 0, freeCount);
                freeIndexes = grown;
            }
            freeIndexes[freeCount++] = index;
        }
    }

    @Override
    public void run() {
        while (true) {
            int n = Native.selectorSelect(selector, -1, readyAddress, CAPACITY);
            if (n < 0) {
                LOG.log(Level.WARNING, "the virtual-thread poller's select failed: " + Native.lastError());
                LockSupport.parkNanos(10_000_000L);
                continue;
            }
            AtomicReferenceArray<Waits> table = byIndex;
            for (int i = 0; i < n; i++) {
                int index = ready.getInt(i * 8);
                int ops = ready.getInt(i * 8 + 4);
                Waits waits = index >= 0 && index < table.length() ? table.get(index) : null;
                if (waits != null) {
                    waits.fire(ops);
                }
            }
        }
    }

    /**
     * The waiting virtual threads of one channel: at most one per direction (reads and accepts,
     * writes and connects), as the channel's locks allow. The key's interest is what they wait for.
     */
    static final class Waits {
        private static final int READS = java.nio.channels.SelectionKey.OP_READ | java.nio.channels.SelectionKey.OP_ACCEPT;

        private final VirtualPoller poller;
        final int index;
        long key;
        private Thread reader;
        private Thread writer;
        private int readOp;
        private int writeOp;
        private int interest;
        private boolean closed;

        Waits(VirtualPoller poller, int index) {
            this.poller = poller;
            this.index = index;
        }

        /**
         * Parks the calling virtual thread until the channel may be ready for {@code op}, the
         * channel is closed, the thread is interrupted, or {@code deadline} ({@link System#nanoTime()},
         * 0 for none) passes. Returns false only when the deadline passed.
         */
        boolean await(int op, long deadline) {
            Thread me = Thread.currentThread();
            boolean read = (op & READS) != 0;
            synchronized (this) {
                if (closed) {
                    return true;
                }
                if (read) {
                    reader = me;
                    readOp = op;
                } else {
                    writer = me;
                    writeOp = op;
                }
                update();
            }
            try {
                while (waiting(me, read)) {
                    if (me.isInterrupted()) {
                        return true;
                    }
                    if (deadline == 0) {
                        LockSupport.park(this);
                    } else {
                        long left = deadline - System.nanoTime();
                        if (left <= 0) {
                            return false;
                        }
                        LockSupport.parkNanos(this, left);
                    }
                }
                return true;
            } finally {
                synchronized (this) {
                    if (read && reader == me) {
                        reader = null;
                        update();
                    } else if (!read && writer == me) {
                        writer = null;
                        update();
                    }
                }
            }
        }

        private synchronized boolean waiting(Thread me, boolean read) {
            return !closed && (read ? reader : writer) == me;
        }

        /** The poller found the channel ready for {@code ops}: wakes who waits for them. */
        void fire(int ops) {
            Thread wakeReader = null;
            Thread wakeWriter = null;
            synchronized (this) {
                if (reader != null && (ops & readOp) != 0) {
                    wakeReader = reader;
                    reader = null;
                }
                if (writer != null && (ops & writeOp) != 0) {
                    wakeWriter = writer;
                    writer = null;
                }
                update();
            }
            if (wakeReader != null) {
                LockSupport.unpark(wakeReader);
            }
            if (wakeWriter != null) {
                LockSupport.unpark(wakeWriter);
            }
        }

        /** Sets the key's interest to what the waiting threads wait for. Holds the monitor. */
        private void update() {
            int wanted = closed ? 0 : (reader != null ? readOp : 0) | (writer != null ? writeOp : 0);
            if (wanted != interest && key != 0) {
                interest = wanted;
                if (Native.keyInterest(key, wanted) < 0) {
                    Native.lastError();
                }
            }
        }

        /**
         * The channel is closing: wakes its waiters and removes its registration. Runs inside
         * {@code Thread.interrupt()} too, so it never waits for anything but the monitor.
         */
        void close() {
            Thread wakeReader;
            Thread wakeWriter;
            long registered;
            synchronized (this) {
                if (closed) {
                    return;
                }
                closed = true;
                wakeReader = reader;
                wakeWriter = writer;
                reader = null;
                writer = null;
                registered = key;
                key = 0;
            }
            if (registered != 0) {
                Native.keyDeregister(poller.selector, registered);
            }
            poller.release(index);
            if (wakeReader != null) {
                LockSupport.unpark(wakeReader);
            }
            if (wakeWriter != null) {
                LockSupport.unpark(wakeWriter);
            }
        }
    }
}
