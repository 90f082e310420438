package dev.hadronio.nio;

import dev.hadronio.internal.Addresses;
import dev.hadronio.internal.Native;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.SocketAddress;
import java.net.SocketOption;
import java.net.SocketTimeoutException;
import java.net.StandardSocketOptions;
import java.nio.channels.AlreadyBoundException;
import java.nio.channels.ClosedChannelException;
import java.nio.channels.IllegalBlockingModeException;
import java.nio.channels.NotYetBoundException;
import java.nio.channels.SelectionKey;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.nio.channels.spi.SelectorProvider;
import java.util.Objects;
import java.util.Set;
import java.util.concurrent.locks.ReentrantLock;

/**
 * A server socket channel of hadroNIO: a kernel TCP listener. Accepted channels speak hadroNIO
 * with hadroNIO clients and plain TCP with everyone else. Behaves like the JDK's.
 */
public final class HadronioServerSocketChannel extends ServerSocketChannel {
    private final ReentrantLock acceptLock = new ReentrantLock();
    private final Object stateLock = new Object();
    private final NativeHandle handle;
    private InetSocketAddress localAddress;
    private volatile int acceptTimeoutMillis;
    private ServerSocketAdaptor adaptor;
    private boolean closing;
    /** Where virtual threads wait for connections; registered on first use. */
    private volatile VirtualPoller.Waits waits;

    public HadronioServerSocketChannel(SelectorProvider provider) throws IOException {
        super(provider);
        this.handle = NativeHandle.listener(this, Native.listenerOpen());
    }

    long nativeHandle() throws ClosedChannelException {
        long h = handle.get();
        if (h == 0 || !isOpen()) {
            throw new ClosedChannelException();
        }
        return h;
    }

    Object stateLock() {
        return stateLock;
    }

    private void ensureOpen() throws ClosedChannelException {
        if (!isOpen()) {
            throw new ClosedChannelException();
        }
    }

    @Override
    public ServerSocketChannel bind(SocketAddress local, int backlog) throws IOException {
        synchronized (stateLock) {
            ensureOpen();
            if (localAddress != null) {
                throw new AlreadyBoundException();
            }
            InetSocketAddress address = local == null ? Addresses.any(0) : Addresses.check(local);
            Native.listenerBind(handle.get(), Addresses.ip(address), Addresses.scope(address), address.getPort(), backlog);
            localAddress = Addresses.decode(Native.listenerLocalAddress(handle.get()));
        }
        return this;
    }

    @Override
    public SocketChannel accept() throws IOException {
        return accept(false);
    }

    /** Accepts; {@code adaptor} requires blocking mode and honours the adaptor's timeout. */
    SocketChannel accept(boolean adaptor) throws IOException {
        acceptLock.lock();
        try {
            boolean blocking = isBlocking();
            if (adaptor && !blocking) {
                throw new IllegalBlockingModeException();
            }
            long accepted = 0;
            try {
                if (blocking) {
                    begin();
                }
                synchronized (stateLock) {
                    ensureOpen();
                    if (localAddress == null) {
                        throw new NotYetBoundException();
                    }
                }
                long timeout = adaptor ? acceptTimeoutMillis : 0;
                long h = handle.enter();
                try {
                    accepted = NativeConnection.parks(blocking)
                        ? acceptParked(h, NativeConnection.deadline(timeout))
                        : Native.listenerAccept(h, blocking, timeout);
                } finally {
                    handle.leave();
                }
            } finally {
                if (blocking) {
                    end(accepted != 0);
                }
            }
            if (accepted == 0) {
                return null;
            }
            return new HadronioSocketChannel(provider(), accepted);
        } finally {
            acceptLock.unlock();
        }
    }

    /** Accepts on a virtual thread: non-blocking attempts, parked in between (0 once closed). */
    private long acceptParked(long h, long deadline) throws IOException {
        while (true) {
            long accepted = Native.listenerAccept(h, false, 0);
            if (accepted != 0) {
                return accepted;
            }
            VirtualPoller.Waits w = waits;
            if (w == null) {
                synchronized (stateLock) {
                    if (closing) {
                        return 0;
                    }
                    w = waits;
                    if (w == null) {
                        w = VirtualPoller.get().register(h, true);
                        waits = w;
                    }
                }
            }
            if (!w.await(SelectionKey.OP_ACCEPT, deadline)) {
                throw new SocketTimeoutException("Accept timed out");
            }
        }
    }

    /** Closes the listener and wakes a blocked accept; never waits (runs inside interrupt()). */
    @Override
    protected void implCloseSelectableChannel() throws IOException {
        VirtualPoller.Waits w;
        synchronized (stateLock) {
            closing = true;
            Native.listenerClose(handle.get());
            handle.retire();
            w = waits;
        }
        if (w != null) {
            w.close();
        }
    }

    @Override
    protected void implConfigureBlocking(boolean block) throws IOException {
        acceptLock.lock();
        try {
            synchronized (stateLock) {
                ensureOpen();
            }
        } finally {
            acceptLock.unlock();
        }
    }

    @Override
    public SocketAddress getLocalAddress() throws IOException {
        synchronized (stateLock) {
            ensureOpen();
            return localAddress;
        }
    }

    InetSocketAddress localAddress() {
        synchronized (stateLock) {
            return localAddress;
        }
    }

    static final Set<SocketOption<?>> OPTIONS = Set.of(StandardSocketOptions.SO_RCVBUF, StandardSocketOptions.SO_REUSEADDR,
            StandardSocketOptions.SO_REUSEPORT);

    @Override
    public Set<SocketOption<?>> supportedOptions() {
        return OPTIONS;
    }

    @Override
    public <T> ServerSocketChannel setOption(SocketOption<T> name, T value) throws IOException {
        Objects.requireNonNull(name);
        if (!OPTIONS.contains(name)) {
            throw new UnsupportedOperationException("'" + name + "' not supported");
        }
        int encoded = Options.encode(name, value);
        synchronized (stateLock) {
            ensureOpen();
            Native.listenerSetOption(handle.get(), Options.id(name), encoded);
        }
        return this;
    }

    @Override
    public <T> T getOption(SocketOption<T> name) throws IOException {
        Objects.requireNonNull(name);
        if (!OPTIONS.contains(name)) {
            throw new UnsupportedOperationException("'" + name + "' not supported");
        }
        synchronized (stateLock) {
            ensureOpen();
            return Options.decode(name, Native.listenerGetOption(handle.get(), Options.id(name)));
        }
    }

    @Override
    public ServerSocket socket() {
        synchronized (stateLock) {
            if (adaptor == null) {
                try {
                    adaptor = new ServerSocketAdaptor(this);
                } catch (IOException e) {
                    throw new IllegalStateException("cannot create the server socket adaptor", e);
                }
            }
            return adaptor;
        }
    }

    int acceptTimeout() {
        return acceptTimeoutMillis;
    }

    void acceptTimeout(int millis) {
        acceptTimeoutMillis = millis;
    }

    @Override
    public String toString() {
        StringBuilder text = new StringBuilder(getClass().getSimpleName()).append('[');
        if (!isOpen()) {
            text.append("closed");
        } else {
            InetSocketAddress local = localAddress();
            text.append(local == null ? "unbound" : local.toString());
        }
        return text.append(']').toString();
    }
}
