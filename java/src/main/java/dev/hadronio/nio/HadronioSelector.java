package dev.hadronio.nio;

import dev.hadronio.internal.Buffers;
import dev.hadronio.internal.Native;
import dev.hadronio.internal.Status;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.ClosedChannelException;
import java.nio.channels.ClosedSelectorException;
import java.nio.channels.IllegalSelectorException;
import java.nio.channels.SelectionKey;
import java.nio.channels.Selector;
import java.nio.channels.spi.AbstractSelectableChannel;
import java.nio.channels.spi.AbstractSelector;
import java.nio.channels.spi.SelectorProvider;
import java.util.Collections;
import java.util.HashSet;
import java.util.Iterator;
import java.util.Objects;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.Consumer;

/**
 * A selector of hadroNIO channels. Each selector owns a UCX worker and one epoll set; channels
 * registered with it move their connection onto that worker (if it has none yet). A select looks
 * only at channels that may have become ready and at those ready last time, so its cost grows
 * with the number of ready channels, not registered ones. Waiting spins briefly and then sleeps
 * in epoll, so an idle selector uses no CPU. Semantics are the JDK's: level-triggered readiness,
 * {@link #wakeup()} before or during a select, cancelled keys removed at the next select, and a
 * blocking {@link #select()} that returns only with ready keys or after a wakeup.
 */
public final class HadronioSelector extends AbstractSelector {
    private final NativeHandle handle;
    private final Object registrationLock = new Object();
    private final IndexTable<HadronioSelectionKey> byIndex = new IndexTable<>();
    private final Set<SelectionKey> keys = ConcurrentHashMap.newKeySet();
    /**
     * Set under {@code registrationLock} when closing starts. A registration checks it and adds
     * its key under the same lock, so the close either sees (and cancels) the key or the
     * registration fails.
     */
    private volatile boolean closing;
    private final Set<SelectionKey> publicKeys = Collections.unmodifiableSet(keys);
    private final Set<SelectionKey> selectedKeys = new HashSet<>();
    private final Set<SelectionKey> publicSelectedKeys = new UngrowableSet<>(selectedKeys);
    private ByteBuffer ready;
    private long readyAddress;
    private int readyCapacity;

    public HadronioSelector(SelectorProvider provider) {
        super(provider);
        this.handle = NativeHandle.selector(this, Native.selectorOpen());
        allocateReady(64);
    }

    private void allocateReady(int pairs) {
        ready = ByteBuffer.allocateDirect(pairs * 8).order(ByteOrder.nativeOrder());
        readyAddress = Buffers.address(ready);
        readyCapacity = pairs;
    }

    private void ensureOpen() {
        if (!isOpen() || closing) {
            throw new ClosedSelectorException();
        }
    }

    @Override
    public Set<SelectionKey> keys() {
        ensureOpen();
        return publicKeys;
    }

    @Override
    public Set<SelectionKey> selectedKeys() {
        ensureOpen();
        return publicSelectedKeys;
    }

    // --- registration -------------------------------------------------------------------------

    @Override
    protected SelectionKey register(AbstractSelectableChannel channel, int ops, Object attachment) {
        boolean listener;
        if (channel instanceof HadronioSocketChannel) {
            listener = false;
        } else if (channel instanceof HadronioServerSocketChannel) {
            listener = true;
        } else {
            throw new IllegalSelectorException();
        }
        ensureOpen();
        HadronioSelectionKey key = byIndex.add(index -> new HadronioSelectionKey(channel, this, index));
        key.attach(attachment);
        try {
            synchronized (registrationLock) {
                ensureOpen();
                long selectorHandle = handle.get();
                if (listener) {
                    HadronioServerSocketChannel server = (HadronioServerSocketChannel) channel;
                    synchronized (server.stateLock()) {
                        key.attachNative(Native.keyRegister(selectorHandle, server.nativeHandle(), true, key.index, ops), ops);
                    }
                } else {
                    HadronioSocketChannel socket = (HadronioSocketChannel) channel;
                    synchronized (socket.stateLock()) {
                        key.attachNative(Native.keyRegister(selectorHandle, socket.nativeHandle(), false, key.index, ops), ops);
                    }
                }
                keys.add(key);
            }
        } catch (ClosedSelectorException e) {
            byIndex.release(key.index);
            throw e;
        } catch (ClosedChannelException e) {
            // Closed while registering: the key is born cancelled and goes at the next select.
            key.attachNative(0, ops);
            keys.add(key);
            key.cancel();
            return key;
        }
        return key;
    }

    /** Drops keys cancelled since the last select. Call while holding the selector's lock. */
    private void processDeregisterQueue() {
        Set<SelectionKey> cancelled = cancelledKeys();
        synchronized (cancelled) {
            if (cancelled.isEmpty()) {
                return;
            }
            Iterator<SelectionKey> iterator = cancelled.iterator();
            while (iterator.hasNext()) {
                HadronioSelectionKey key = (HadronioSelectionKey) iterator.next();
                iterator.remove();
                synchronized (registrationLock) {
                    long selectorHandle = handle.get();
                    if (selectorHandle != 0) {
                        key.detachNative(selectorHandle);
                    }
                }
                keys.remove(key);
                selectedKeys.remove(key);
                deregister(key);
                byIndex.release(key.index);
            }
        }
    }

    // --- selection ----------------------------------------------------------------------------

    @Override
    public int selectNow() throws IOException {
        return doSelect(null, 0);
    }

    @Override
    public int select(long timeout) throws IOException {
        if (timeout < 0) {
            throw new IllegalArgumentException("Negative timeout");
        }
        return doSelect(null, timeout == 0 ? -1 : timeout);
    }

    @Override
    public int select() throws IOException {
        return doSelect(null, -1);
    }

    @Override
    public int select(Consumer<SelectionKey> action, long timeout) throws IOException {
        if (timeout < 0) {
            throw new IllegalArgumentException("Negative timeout");
        }
        return doSelect(Objects.requireNonNull(action), timeout == 0 ? -1 : timeout);
    }

    @Override
    public int select(Consumer<SelectionKey> action) throws IOException {
        return select(action, 0);
    }

    @Override
    public int selectNow(Consumer<SelectionKey> action) throws IOException {
        return doSelect(Objects.requireNonNull(action), 0);
    }

    /** {@code timeout}: -1 blocks until ready or woken, 0 does not block, > 0 milliseconds. */
    private int doSelect(Consumer<SelectionKey> action, long timeout) throws IOException {
        synchronized (this) {
            ensureOpen();
            processDeregisterQueue();
            int registered = keys.size();
            if (registered > readyCapacity) {
                allocateReady(Math.max(registered, readyCapacity * 2));
            }
            boolean blocking = timeout != 0;
            int n;
            if (blocking) {
                begin();
            }
            try {
                n = Native.selectorSelect(handle.get(), timeout, readyAddress, readyCapacity);
            } finally {
                if (blocking) {
                    end();
                }
            }
            if (n < 0) {
                throw Status.exception(n);
            }
            processDeregisterQueue();
            return processReady(n, action);
        }
    }

    private int processReady(int n, Consumer<SelectionKey> action) {
        int updated = 0;
        for (int i = 0; i < n; i++) {
            HadronioSelectionKey key = byIndex.get(ready.getInt(i * 8));
            int ops = ready.getInt(i * 8 + 4);
            if (key == null || !key.isValid()) {
                continue;
            }
            ops &= key.interest();
            if (ops == 0) {
                continue;
            }
            if (action != null) {
                key.readyOps = ops;
                action.accept(key);
                ensureOpen();
                updated++;
            } else if (selectedKeys.contains(key)) {
                int before = key.readyOps;
                if ((before | ops) != before) {
                    key.readyOps = before | ops;
                    updated++;
                }
            } else {
                key.readyOps = ops;
                selectedKeys.add(key);
                updated++;
            }
        }
        return updated;
    }

    /**
     * Borrows the handle rather than taking a lock: a thread that hands work to the selector's
     * thread must not hold a lock that the woken thread's next {@code register} needs.
     */
    @Override
    public Selector wakeup() {
        long h;
        try {
            h = handle.enter();
        } catch (ClosedChannelException e) {
            return this;
        }
        try {
            Status.ignore(Native.selectorWakeup(h));
        } finally {
            handle.leave();
        }
        return this;
    }

    @Override
    protected void implCloseSelector() throws IOException {
        wakeup();
        synchronized (this) {
            synchronized (registrationLock) {
                closing = true;
            }
            for (SelectionKey key : keys) {
                key.cancel();
            }
            processDeregisterQueue();
            handle.retire();
        }
    }
}
