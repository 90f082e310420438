package dev.hadronio.nio;

import dev.hadronio.internal.Addresses;
import dev.hadronio.internal.Buffers;
import dev.hadronio.internal.Status;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.SocketAddress;
import java.net.SocketOption;
import java.net.SocketTimeoutException;
import java.net.StandardSocketOptions;
import java.nio.ByteBuffer;
import java.nio.channels.AlreadyBoundException;
import java.nio.channels.AlreadyConnectedException;
import java.nio.channels.AsynchronousCloseException;
import java.nio.channels.ClosedChannelException;
import java.nio.channels.ConnectionPendingException;
import java.nio.channels.IllegalBlockingModeException;
import java.nio.channels.NoConnectionPendingException;
import java.nio.channels.NotYetConnectedException;
import java.nio.channels.SocketChannel;
import java.nio.channels.spi.SelectorProvider;
import java.util.Objects;
import java.util.Set;
import java.util.concurrent.locks.ReentrantLock;

/**
 * A socket channel of hadroNIO. It behaves like the JDK's: blocking and non-blocking mode,
 * partial writes in non-blocking mode only, reads that return what is available, half-close,
 * the JDK's exceptions for misuse and asynchronous close. Differences: socket options apply to
 * the TCP control connection (buffer sizes, {@code TCP_NODELAY} and {@code IP_TOS} do not change
 * the UCX path); the channel's data moves over UCX once both ends have upgraded, see
 * {@link #transportDescription()}. A blocking operation on a virtual thread parks the thread
 * instead of blocking its carrier (see {@link VirtualPoller}). The native calls go through the
 * channel's {@link NativeConnection}.
 */
public final class HadronioSocketChannel extends SocketChannel {
    private static final int UNCONNECTED = 0;
    private static final int PENDING = 1;
    private static final int CONNECTED = 2;
    private static final int CLOSED = 3;
    /**
     * Classes the read and write paths need, loaded with this one: a server whose first read
     * comes when its process has no file descriptor left (at its limit) could not open their
     * class files then.
     */
    private static final Class<?>[] PRELOADED = {Status.class};

    private final ReentrantLock readLock = new ReentrantLock();
    private final ReentrantLock writeLock = new ReentrantLock();
    private final Object stateLock = new Object();
    private final NativeConnection connection;

    private volatile int state;
    private volatile boolean inputClosed;
    private volatile boolean outputClosed;
    private InetSocketAddress localAddress;
    private InetSocketAddress remoteAddress;
    private volatile int readTimeoutMillis;
    private SocketAdaptor adaptor;
    /** Where virtual threads wait for this channel; registered on first use. */
    private volatile VirtualPoller.Waits waits;

    public HadronioSocketChannel(SelectorProvider provider) throws IOException {
        super(provider);
        this.connection = NativeConnection.open(this, new Parking());
        this.state = UNCONNECTED;
    }

    /** A channel for a connection accepted by a server socket channel. */
    HadronioSocketChannel(SelectorProvider provider, long accepted) {
        super(provider);
        this.connection = NativeConnection.accepted(this, accepted, new Parking());
        this.state = CONNECTED;
        this.localAddress = connection.localAddress();
        this.remoteAddress = connection.remoteAddress();
    }

    /** The native handle for a selector registration; call under {@link #stateLock()}. */
    long nativeHandle() throws ClosedChannelException {
        long h = connection.handle();
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

    private void ensureOpenAndConnected() throws ClosedChannelException {
        int s = state;
        if (s == CLOSED || !isOpen()) {
            throw new ClosedChannelException();
        }
        if (s != CONNECTED) {
            throw new NotYetConnectedException();
        }
    }

    // --- reading ------------------------------------------------------------------------------

    @Override
    public int read(ByteBuffer dst) throws IOException {
        Objects.requireNonNull(dst);
        readLock.lock();
        try {
            ensureOpenAndConnected();
            boolean blocking = isBlocking();
            int n = 0;
            try {
                beginBlocking(blocking);
                if (inputClosed) {
                    return -1;
                }
                n = readInto(dst, blocking, readTimeoutMillis);
            } finally {
                endBlocking(blocking, n > 0);
                if (n <= 0 && inputClosed) {
                    return -1;
                }
            }
            return n;
        } finally {
            readLock.unlock();
        }
    }

    /** Reads into {@code dst}; -1 at end of stream, 0 if nothing (non-blocking) or closed. */
    private int readInto(ByteBuffer dst, boolean blocking, int timeoutMillis) throws IOException {
        if (dst.isReadOnly()) {
            throw new IllegalArgumentException("Read-only buffer");
        }
        int position = dst.position();
        int remaining = Math.max(dst.limit() - position, 0);
        if (remaining == 0) {
            return 0;
        }
        long n;
        if (dst.isDirect()) {
            n = connection.read(Buffers.address(dst) + position, remaining, blocking, timeoutMillis);
            if (n > 0) {
                dst.position(position + (int) n);
            }
        } else {
            ByteBuffer temporary = Buffers.temporary(remaining);
            int length = Math.min(remaining, temporary.capacity());
            n = connection.read(Buffers.address(temporary), length, blocking, timeoutMillis);
            if (n > 0) {
                temporary.limit((int) n);
                dst.put(temporary);
            }
        }
        return Status.readResult(n, blocking);
    }

    @Override
    public long read(ByteBuffer[] dsts, int offset, int length) throws IOException {
        Objects.checkFromIndexSize(offset, length, dsts.length);
        readLock.lock();
        try {
            ensureOpenAndConnected();
            boolean blocking = isBlocking();
            long n = 0;
            try {
                beginBlocking(blocking);
                if (inputClosed) {
                    return -1;
                }
                Buffers.IoVector vector = Buffers.vector();
                vector.reset(dsts, offset, length);
                for (int i = offset; i < offset + length; i++) {
                    ByteBuffer dst = dsts[i];
                    if (dst.isReadOnly()) {
                        throw new IllegalArgumentException("Read-only buffer");
                    }
                    if (!vector.add(dst, i, false)) {
                        break;
                    }
                }
                if (vector.count() == 0) {
                    return 0;
                }
                int timeoutMillis = readTimeoutMillis;
                long r = connection.readv(vector.address(), vector.count(), blocking, timeoutMillis);
                if (r > 0) {
                    vector.complete(dsts, r, true);
                }
                n = Status.readResult(r, blocking);
            } finally {
                endBlocking(blocking, n > 0);
                if (n <= 0 && inputClosed) {
                    return -1;
                }
            }
            return n;
        } finally {
            readLock.unlock();
        }
    }

    // --- writing ------------------------------------------------------------------------------

    @Override
    public int write(ByteBuffer src) throws IOException {
        Objects.requireNonNull(src);
        writeLock.lock();
        try {
            ensureOpenAndConnected();
            boolean blocking = isBlocking();
            int n = 0;
            try {
                beginBlocking(blocking);
                if (outputClosed) {
                    throw new ClosedChannelException();
                }
                n = writeFrom(src, blocking);
            } finally {
                endBlocking(blocking, n > 0);
                if (n <= 0 && outputClosed) {
                    throw new AsynchronousCloseException();
                }
            }
            return n;
        } finally {
            writeLock.unlock();
        }
    }

    private int writeFrom(ByteBuffer src, boolean blocking) throws IOException {
        int position = src.position();
        int remaining = Math.max(src.limit() - position, 0);
        if (remaining == 0) {
            return 0;
        }
        if (src.isDirect()) {
            long n = connection.write(Buffers.address(src) + position, remaining, blocking);
            if (n > 0) {
                src.position(position + (int) n);
            }
            return Status.writeResult(n, blocking);
        }
        int written = 0;
        while (written < remaining) {
            ByteBuffer temporary = Buffers.temporary(remaining - written);
            int length = Math.min(remaining - written, temporary.capacity());
            ByteBuffer slice = src.duplicate();
            slice.limit(src.position() + length);
            temporary.put(slice);
            int n = connection.write(Buffers.address(temporary), length, blocking);
            if (n > 0) {
                src.position(src.position() + n);
                written += n;
            }
            if (n < 0) {
                if (written > 0) {
                    Status.ignore(n);
                    return written;
                }
                return Status.writeResult(n, blocking);
            }
            if (!blocking || n < length) {
                break;
            }
        }
        return written;
    }

    @Override
    public long write(ByteBuffer[] srcs, int offset, int length) throws IOException {
        Objects.checkFromIndexSize(offset, length, srcs.length);
        writeLock.lock();
        try {
            ensureOpenAndConnected();
            boolean blocking = isBlocking();
            long n = 0;
            try {
                beginBlocking(blocking);
                if (outputClosed) {
                    throw new ClosedChannelException();
                }
                long total = 0;
                for (int i = offset; i < offset + length; i++) {
                    total += srcs[i].remaining();
                }
                while (n < total) {
                    Buffers.IoVector vector = Buffers.vector();
                    vector.reset(srcs, offset, length);
                    for (int i = offset; i < offset + length; i++) {
                        if (!vector.add(srcs[i], i, true)) {
                            break;
                        }
                    }
                    if (vector.count() == 0) {
                        break;
                    }
                    long r = connection.writev(vector.address(), vector.count(), blocking);
                    if (r > 0) {
                        vector.complete(srcs, r, false);
                        n += r;
                    }
                    if (r < 0) {
                        if (n > 0) {
                            Status.ignore(r);
                            break;
                        }
                        n = Status.writeResult(r, blocking);
                        break;
                    }
                    if (!blocking) {
                        break;
                    }
                }
            } finally {
                endBlocking(blocking, n > 0);
                if (n <= 0 && outputClosed) {
                    throw new AsynchronousCloseException();
                }
            }
            return n;
        } finally {
            writeLock.unlock();
        }
    }

    // --- blocking bracket ---------------------------------------------------------------------

    private void beginBlocking(boolean blocking) throws ClosedChannelException {
        if (blocking) {
            begin();
            ensureOpen();
        }
    }

    private void endBlocking(boolean blocking, boolean completed) throws AsynchronousCloseException {
        if (blocking) {
            end(completed);
        }
    }

    // --- connecting ---------------------------------------------------------------------------

    @Override
    public SocketChannel bind(SocketAddress local) throws IOException {
        readLock.lock();
        try {
            writeLock.lock();
            try {
                synchronized (stateLock) {
                    ensureOpen();
                    if (state == PENDING) {
                        throw new ConnectionPendingException();
                    }
                    if (localAddress != null) {
                        throw new AlreadyBoundException();
                    }
                    InetSocketAddress address = local == null ? Addresses.any(0) : Addresses.check(local);
                    connection.bind(address);
                    localAddress = connection.localAddress();
                }
            } finally {
                writeLock.unlock();
            }
        } finally {
            readLock.unlock();
        }
        return this;
    }

    @Override
    public boolean connect(SocketAddress remote) throws IOException {
        return connect(remote, 0, false);
    }

    /** Connects; {@code timeoutMillis > 0} (socket adaptor) bounds a blocking connect. */
    boolean connect(SocketAddress remote, int timeoutMillis, boolean requireBlocking) throws IOException {
        InetSocketAddress address = Addresses.remote(Addresses.check(remote));
        try {
            readLock.lock();
            try {
                writeLock.lock();
                try {
                    boolean blocking = isBlocking();
                    if (requireBlocking && !blocking) {
                        throw new IllegalBlockingModeException();
                    }
                    boolean connected = false;
                    try {
                        if (blocking) {
                            begin();
                        }
                        synchronized (stateLock) {
                            ensureOpen();
                            if (state == CONNECTED) {
                                throw new AlreadyConnectedException();
                            }
                            if (state == PENDING) {
                                throw new ConnectionPendingException();
                            }
                            state = PENDING;
                            remoteAddress = address;
                        }
                        connected = connection.connect(address, blocking, timeoutMillis) == 1 && isOpen();
                    } finally {
                        endConnect(blocking, connected);
                    }
                    return connected;
                } finally {
                    writeLock.unlock();
                }
            } finally {
                readLock.unlock();
            }
        } catch (IOException e) {
            close();
            throw e;
        }
    }

    private void endConnect(boolean blocking, boolean connected) throws IOException {
        if (blocking) {
            end(connected);
        }
        if (connected) {
            synchronized (stateLock) {
                if (state == PENDING) {
                    localAddress = connection.localAddress();
                    state = CONNECTED;
                }
            }
        }
    }

    @Override
    public boolean finishConnect() throws IOException {
        try {
            readLock.lock();
            try {
                writeLock.lock();
                try {
                    if (state == CONNECTED) {
                        return true;
                    }
                    boolean blocking = isBlocking();
                    boolean connected = false;
                    try {
                        if (blocking) {
                            begin();
                        }
                        synchronized (stateLock) {
                            ensureOpen();
                            if (state != PENDING) {
                                throw new NoConnectionPendingException();
                            }
                        }
                        connected = connection.finishConnect(blocking) == 1 && isOpen();
                    } finally {
                        endConnect(blocking, connected);
                    }
                    return connected;
                } finally {
                    writeLock.unlock();
                }
            } finally {
                readLock.unlock();
            }
        } catch (IOException e) {
            close();
            throw e;
        }
    }

    // --- virtual threads ----------------------------------------------------------------------

    /**
     * How a virtual thread of this channel waits: on the channel's registration with the
     * virtual-thread poller, made on first use. (A class rather than a lambda: a channel's first
     * blocking call then links no method handles.)
     */
    private final class Parking implements NativeConnection.Parker {
        @Override
        public void park(int op, long deadline, String what) throws IOException {
            VirtualPoller.Waits w = waits;
            if (w == null) {
                synchronized (stateLock) {
                    if (state == CLOSED) {
                        return;
                    }
                    w = waits;
                    if (w == null) {
                        w = VirtualPoller.get().register(connection.handle(), false);
                        waits = w;
                    }
                }
            }
            if (!w.await(op, deadline)) {
                throw new SocketTimeoutException(what + " timed out");
            }
        }
    }

    @Override
    public boolean isConnected() {
        return state == CONNECTED;
    }

    @Override
    public boolean isConnectionPending() {
        return state == PENDING;
    }

    @Override
    public SocketAddress getLocalAddress() throws IOException {
        synchronized (stateLock) {
            ensureOpen();
            return localAddress;
        }
    }

    @Override
    public SocketAddress getRemoteAddress() throws IOException {
        synchronized (stateLock) {
            ensureOpen();
            return remoteAddress;
        }
    }

    InetSocketAddress localAddress() {
        synchronized (stateLock) {
            return localAddress;
        }
    }

    InetSocketAddress remoteAddress() {
        synchronized (stateLock) {
            return state == CONNECTED ? remoteAddress : null;
        }
    }

    // --- shutdown and close -------------------------------------------------------------------

    @Override
    public SocketChannel shutdownInput() throws IOException {
        synchronized (stateLock) {
            ensureOpen();
            if (state != CONNECTED) {
                throw new NotYetConnectedException();
            }
            if (!inputClosed) {
                connection.shutdown(true, false);
                inputClosed = true;
            }
        }
        return this;
    }

    @Override
    public SocketChannel shutdownOutput() throws IOException {
        synchronized (stateLock) {
            ensureOpen();
            if (state != CONNECTED) {
                throw new NotYetConnectedException();
            }
            if (!outputClosed) {
                connection.shutdown(false, true);
                outputClosed = true;
            }
        }
        return this;
    }

    boolean isInputOpen() {
        return !inputClosed;
    }

    boolean isOutputOpen() {
        return !outputClosed;
    }

    /**
     * Closes the connection (gracefully unless SO_LINGER is 0 or unread data is left) and wakes
     * threads blocked in it; the native handle is destroyed when the last of them has left. Never
     * waits for them: this runs inside {@code Thread.interrupt()} as well.
     */
    @Override
    protected void implCloseSelectableChannel() throws IOException {
        VirtualPoller.Waits w;
        synchronized (stateLock) {
            state = CLOSED;
            connection.close();
            w = waits;
        }
        if (w != null) {
            w.close();
        }
    }

    @Override
    protected void implConfigureBlocking(boolean block) throws IOException {
        readLock.lock();
        try {
            writeLock.lock();
            try {
                synchronized (stateLock) {
                    ensureOpen();
                }
            } finally {
                writeLock.unlock();
            }
        } finally {
            readLock.unlock();
        }
    }

    // --- options and adaptor ------------------------------------------------------------------

    static final Set<SocketOption<?>> OPTIONS = Set.of(
        StandardSocketOptions.SO_SNDBUF,
        StandardSocketOptions.SO_RCVBUF,
        StandardSocketOptions.SO_KEEPALIVE,
        StandardSocketOptions.SO_REUSEADDR,
        StandardSocketOptions.SO_REUSEPORT,
        StandardSocketOptions.SO_LINGER,
        StandardSocketOptions.TCP_NODELAY,
        StandardSocketOptions.IP_TOS);

    @Override
    public Set<SocketOption<?>> supportedOptions() {
        return OPTIONS;
    }

    @Override
    public <T> SocketChannel setOption(SocketOption<T> name, T value) throws IOException {
        Objects.requireNonNull(name);
        if (!OPTIONS.contains(name)) {
            throw new UnsupportedOperationException("'" + name + "' not supported");
        }
        int encoded = Options.encode(name, value);
        synchronized (stateLock) {
            ensureOpen();
            connection.setOption(Options.id(name), encoded);
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
            return Options.decode(name, connection.getOption(Options.id(name)));
        }
    }

    @Override
    public java.net.Socket socket() {
        synchronized (stateLock) {
            if (adaptor == null) {
                adaptor = new SocketAdaptor(this);
            }
            return adaptor;
        }
    }

    int readTimeout() {
        return readTimeoutMillis;
    }

    void readTimeout(int millis) {
        readTimeoutMillis = millis;
    }

    /** Blocking read for the socket adaptor's input stream, honouring its read timeout. */
    int blockingRead(byte[] b, int off, int len) throws IOException {
        Objects.checkFromIndexSize(off, len, b.length);
        if (len == 0) {
            return 0;
        }
        readLock.lock();
        try {
            ensureOpenAndConnected();
            if (!isBlocking()) {
                throw new IllegalBlockingModeException();
            }
            int n = 0;
            try {
                beginBlocking(true);
                if (inputClosed) {
                    return -1;
                }
                n = readInto(ByteBuffer.wrap(b, off, len), true, readTimeoutMillis);
            } finally {
                endBlocking(true, n > 0);
                if (n <= 0 && inputClosed) {
                    return -1;
                }
            }
            return n;
        } finally {
            readLock.unlock();
        }
    }

    /** Blocking write for the socket adaptor's output stream. */
    void blockingWrite(byte[] b, int off, int len) throws IOException {
        Objects.checkFromIndexSize(off, len, b.length);
        ByteBuffer buffer = ByteBuffer.wrap(b, off, len);
        writeLock.lock();
        try {
            if (!isBlocking()) {
                throw new IllegalBlockingModeException();
            }
            while (buffer.hasRemaining()) {
                write(buffer);
            }
        } finally {
            writeLock.unlock();
        }
    }

    /**
     * Which path this connection's data takes ({@code ucx} or {@code tcp} and why), followed by
     * UCX's description of the endpoint (its transports per lane) when upgraded.
     */
    public String transportDescription() throws IOException {
        synchronized (stateLock) {
            ensureOpen();
            return connection.describe();
        }
    }

    @Override
    public String toString() {
        StringBuilder text = new StringBuilder(getClass().getSimpleName()).append('[');
        if (!isOpen()) {
            text.append("closed");
        } else {
            synchronized (stateLock) {
                switch (state) {
                    case UNCONNECTED:
                        text.append("unconnected");
                        break;
                    case PENDING:
                        text.append("connection-pending");
                        break;
                    case CONNECTED:
                        text.append("connected");
                        if (inputClosed) {
                            text.append(" ishut");
                        }
                        if (outputClosed) {
                            text.append(" oshut");
                        }
                        break;
                    default:
                        text.append("closing");
                }
                if (localAddress != null) {
                    text.append(" local=").append(localAddress);
                }
                if (remoteAddress != null) {
                    text.append(" remote=").append(remoteAddress);
                }
            }
        }
        return text.append(']').toString();
    }
}
