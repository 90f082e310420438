package dev.hadronio.nio;

import dev.hadronio.internal.Buffers;
import dev.hadronio.internal.Config;
import dev.hadronio.internal.Log;
import dev.hadronio.internal.Native;
import dev.hadronio.internal.Status;
import java.lang.System.Logger.Level;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.locks.LockSupport;

/**
 * Where virtual threads wait. A blocking operation on a virtual thread does not block inside the
 * native library (that would pin its carrier thread): it runs non-blocking and, if it cannot
 * proceed, parks the virtual thread until its channel is ready. Every channel used this way is
 * registered with one native selector (interest 0 while nobody waits); channels registered here
 * share that selector's UCX worker, unless they had one already.
 *
 * <p>Two threads take turns selecting on it, as the JDK's own pollers do. While channels keep
 * becoming ready, a virtual thread (the sub-poller) polls the selector without waiting and wakes
 * the waiters it finds ready: from a carrier, a woken virtual thread is queued on that carrier at
 * no cost, where a platform thread would have to wake a carrier for each. When a poll finds
 * nothing, the sub-poller parks and a platform thread (the master) waits in the selector until
 * something is ready, wakes those waiters and hands the polling back.
 */
final class VirtualPoller {
    /** Ready keys taken per select; more are reported by the next one. */
    private static final int CAPACITY = 256;
    /**
     * Polls in a row that found nothing (with a yield between them) before the master waits, as
     * long as they take at most {@code hadronio.spinMicros}: under load the next channel is ready
     * within a few of them, and waking the master costs a thread switch each way.
     */
    private static final int EMPTY_POLLS = 32;
    /** How long the sub-poller may not run in its turn before the master polls for it. */
    private static final long STARVED_NANOS = 20_000_000L;

    private static volatile VirtualPoller instance;

    private final long selector;
    private final Batch master = new Batch();
    private final Batch sub = new Batch();
    /** Whose turn it is to select: the master's (true) or the sub-poller's (false). */
    private volatile boolean masterTurn;
    /** Set while a thread is inside a select (the native selector takes one at a time). */
    private final AtomicBoolean selecting = new AtomicBoolean();
    /** Rounds of the sub-poller; the master watches them while it is the sub-poller's turn. */
    private volatile long subPolls;
    private volatile Thread masterThread;
    private volatile Thread subThread;
    private final IndexTable<Waits> byIndex = new IndexTable<>();

    /** A buffer for the ready keys of one select. */
    private static final class Batch {
        final ByteBuffer ready = ByteBuffer.allocateDirect(CAPACITY * 8).order(ByteOrder.nativeOrder());
        final long address = Buffers.address(ready);
    }

    private VirtualPoller() {
        selector = Native.selectorOpen();
    }

    /** The poller, started on first use (by a virtual thread: JDK 21 or later). */
    static VirtualPoller get() {
        VirtualPoller poller = instance;
        if (poller != null) {
            return poller;
        }
        synchronized (VirtualPoller.class) {
            if (instance == null) {
                VirtualPoller created = new VirtualPoller();
                Thread masterThread = new Thread(created::runMaster, "hadronio-virtual-thread-poller");
                masterThread.setDaemon(true);
                created.masterThread = masterThread;
                created.subThread = startVirtual(created::runSub, "hadronio-virtual-thread-subpoller");
                masterThread.start();
                instance = created;
            }
            return instance;
        }
    }

    /** {@code Thread.ofVirtual().name(name).start(task)}, by name: the library is compiled for Java 11. */
    private static Thread startVirtual(Runnable task, String name) {
        try {
            Object builder = Thread.class.getMethod("ofVirtual").invoke(null);
            Class<?> type = Class.forName("java.lang.Thread$Builder");
            builder = type.getMethod("name", String.class).invoke(builder, name);
            return (Thread) type.getMethod("start", Runnable.class).invoke(builder, task);
        } catch (ReflectiveOperationException e) {
            throw new IllegalStateException("cannot start a virtual thread", e);
        }
    }

    /**
     * Registers a channel's native handle (call under the channel's state lock, so that it is not
     * closed meanwhile); its waits are armed and fired through the returned object.
     */
    Waits register(long channel, boolean listener) {
        Waits waits = byIndex.add(index -> new Waits(this, index));
        try {
            waits.key = Native.keyRegister(selector, channel, listener, waits.index, 0);
        } catch (Throwable e) {
            byIndex.release(waits.index);
            throw e;
        }
        return waits;
    }

    /** The sub-poller (a virtual thread): polls while channels keep becoming ready. */
    private void runSub() {
        long window = Config.get().spinNanos();
        int empty = 0;
        long emptySince = 0;
        while (true) {
            while (masterTurn) {
                LockSupport.park(this);
            }
            subPolls++;
            int n = selecting.compareAndSet(false, true) ? selectAndRelease(sub, 0) : 0;
            if (n > 0) {
                empty = 0;
            } else {
                if (empty++ == 0) {
                    emptySince = System.nanoTime();
                }
                if (empty >= EMPTY_POLLS || System.nanoTime() - emptySince >= window) {
                    empty = 0;
                    masterTurn = true;
                    LockSupport.unpark(masterThread);
                    continue;
                }
            }
            // Let the virtual threads just woken (queued on this carrier) run first.
            Thread.yield();
        }
    }

    /**
     * The master (a platform thread): waits in the selector while the sub-poller rests. While it
     * is the sub-poller's turn, the master still looks now and then whether the sub-poller runs at
     * all: with every carrier taken (virtual threads pinned to their carriers while they wait, as
     * JDK 21 pins them inside {@code synchronized}), it cannot, and the master then polls for it.
     */
    private void runMaster() {
        while (true) {
            long polls = subPolls;
            long seen = System.nanoTime();
            while (!masterTurn) {
                // Returns early when unparked: a hand-over that found the master elsewhere leaves
                // a permit behind. Only a sub-poller that has not polled for the whole time is stuck.
                LockSupport.parkNanos(this, STARVED_NANOS);
                long now = System.nanoTime();
                if (polls != subPolls) {
                    polls = subPolls;
                    seen = now;
                } else if (now - seen >= STARVED_NANOS && !masterTurn && selecting.compareAndSet(false, true)) {
                    selectAndRelease(master, 0);
                    seen = now;
                }
            }
            while (!selecting.compareAndSet(false, true)) {
                Thread.onSpinWait();
            }
            selectAndRelease(master, -1);
            masterTurn = false;
            LockSupport.unpark(subThread);
        }
    }

    /** {@link #select} by the thread that set {@link #selecting}, which it clears afterwards. */
    private int selectAndRelease(Batch batch, long timeoutMillis) {
        try {
            return select(batch, timeoutMillis);
        } finally {
            selecting.set(false);
        }
    }

    /** One select into {@code batch}; wakes the waiters of the channels found ready. */
    private int select(Batch batch, long timeoutMillis) {
        int n = Native.selectorSelect(selector, timeoutMillis, batch.address, CAPACITY);
        if (n < 0) {
            Log.logger().log(Level.WARNING, "the virtual-thread poller's select failed: " + Native.lastError());
            LockSupport.parkNanos(10_000_000L);
            return 0;
        }
        for (int i = 0; i < n; i++) {
            Waits waits = byIndex.get(batch.ready.getInt(i * 8));
            int ops = batch.ready.getInt(i * 8 + 4);
            if (waits != null) {
                waits.fire(ops);
            }
        }
        return n;
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
                Status.ignore(Native.keyInterest(key, wanted));
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
            poller.byIndex.release(index);
            if (wakeReader != null) {
                LockSupport.unpark(wakeReader);
            }
            if (wakeWriter != null) {
                LockSupport.unpark(wakeWriter);
            }
        }
    }
}
