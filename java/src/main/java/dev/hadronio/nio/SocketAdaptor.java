package dev.hadronio.nio;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.net.SocketAddress;
import java.net.SocketException;
import java.net.SocketOption;
import java.net.StandardSocketOptions;
import java.nio.channels.SocketChannel;
import java.util.Set;

/**
 * The {@link Socket} view of a {@link HadronioSocketChannel}, as returned by
 * {@link SocketChannel#socket()}. Options apply to the TCP control connection; OOB data is not
 * supported.
 */
final class SocketAdaptor extends Socket {
    private final HadronioSocketChannel channel;
    private volatile boolean oobInline;
    private InputStream in;
    private OutputStream out;

    SocketAdaptor(HadronioSocketChannel channel) {
        this.channel = channel;
    }

    @Override
    public SocketChannel getChannel() {
        return channel;
    }

    @Override
    public void connect(SocketAddress remote) throws IOException {
        connect(remote, 0);
    }

    @Override
    public void connect(SocketAddress remote, int timeout) throws IOException {
        if (remote == null) {
            throw new IllegalArgumentException("connect: The address can't be null");
        }
        if (timeout < 0) {
            throw new IllegalArgumentException("connect: timeout can't be negative");
        }
        try {
            channel.connect(remote, timeout, true);
        } catch (Exception e) {
            throw Translate.exception(e);
        }
    }

    @Override
    public void bind(SocketAddress local) throws IOException {
        try {
            channel.bind(local);
        } catch (Exception e) {
            throw Translate.exception(e);
        }
    }

    @Override
    public InetAddress getInetAddress() {
        InetSocketAddress remote = channel.remoteAddress();
        return remote == null ? null : remote.getAddress();
    }

    @Override
    public InetAddress getLocalAddress() {
        InetSocketAddress local = channel.isOpen() ? channel.localAddress() : null;
        return local == null ? new InetSocketAddress(0).getAddress() : local.getAddress();
    }

    @Override
    public int getPort() {
        InetSocketAddress remote = channel.remoteAddress();
        return remote == null ? 0 : remote.getPort();
    }

    @Override
    public int getLocalPort() {
        InetSocketAddress local = channel.localAddress();
        return local == null ? -1 : local.getPort();
    }

    @Override
    public SocketAddress getRemoteSocketAddress() {
        return channel.remoteAddress();
    }

    @Override
    public SocketAddress getLocalSocketAddress() {
        return channel.localAddress();
    }

    @Override
    public InputStream getInputStream() throws IOException {
        checkStreams();
        if (!channel.isInputOpen()) {
            throw new SocketException("Socket input is shutdown");
        }
        synchronized (this) {
            if (in == null) {
                in = new InputStream() {
                    @Override
                    public int read() throws IOException {
                        byte[] one = new byte[1];
                        int n = read(one, 0, 1);
                        return n > 0 ? one[0] & 0xff : -1;
                    }

                    @Override
                    public int read(byte[] b, int off, int len) throws IOException {
                        return channel.blockingRead(b, off, len);
                    }

                    @Override
                    public int available() {
                        return 0;
                    }

                    @Override
                    public void close() throws IOException {
                        channel.close();
                    }
                };
            }
            return in;
        }
    }

    @Override
    public OutputStream getOutputStream() throws IOException {
        checkStreams();
        if (!channel.isOutputOpen()) {
            throw new SocketException("Socket output is shutdown");
        }
        synchronized (this) {
            if (out == null) {
                out = new OutputStream() {
                    @Override
                    public void write(int b) throws IOException {
                        write(new byte[] {(byte) b}, 0, 1);
                    }

                    @Override
                    public void write(byte[] b, int off, int len) throws IOException {
                        channel.blockingWrite(b, off, len);
                    }

                    @Override
                    public void close() throws IOException {
                        channel.close();
                    }
                };
            }
            return out;
        }
    }

    private void checkStreams() throws SocketException {
        if (!channel.isOpen()) {
            throw new SocketException("Socket is closed");
        }
        if (!channel.isConnected()) {
            throw new SocketException("Socket is not connected");
        }
    }

    private <T> void set(SocketOption<T> name, T value) throws SocketException {
        try {
            channel.setOption(name, value);
        } catch (IllegalArgumentException e) {
            throw e;
        } catch (Exception e) {
            throw socketException(e);
        }
    }

    private <T> T get(SocketOption<T> name) throws SocketException {
        try {
            return channel.getOption(name);
        } catch (Exception e) {
            throw socketException(e);
        }
    }

    private static SocketException socketException(Exception e) {
        IOException translated = Translate.exception(e);
        if (translated instanceof SocketException) {
            return (SocketException) translated;
        }
        SocketException exception = new SocketException(translated.getMessage());
        exception.initCause(e);
        return exception;
    }

    @Override
    public void setTcpNoDelay(boolean on) throws SocketException {
        set(StandardSocketOptions.TCP_NODELAY, on);
    }

    @Override
    public boolean getTcpNoDelay() throws SocketException {
        return get(StandardSocketOptions.TCP_NODELAY);
    }

    @Override
    public void setSoLinger(boolean on, int linger) throws SocketException {
        if (on && linger < 0) {
            throw new IllegalArgumentException("Invalid value for SO_LINGER");
        }
        set(StandardSocketOptions.SO_LINGER, on ? linger : -1);
    }

    @Override
    public int getSoLinger() throws SocketException {
        return get(StandardSocketOptions.SO_LINGER);
    }

    @Override
    public void sendUrgentData(int data) throws IOException {
        throw new SocketException("Urgent data not supported");
    }

    @Override
    public void setOOBInline(boolean on) throws SocketException {
        checkOpen();
        oobInline = on;
    }

    @Override
    public boolean getOOBInline() throws SocketException {
        checkOpen();
        return oobInline;
    }

    private void checkOpen() throws SocketException {
        if (!channel.isOpen()) {
            throw new SocketException("Socket is closed");
        }
    }

    @Override
    public void setSoTimeout(int timeout) throws SocketException {
        checkOpen();
        if (timeout < 0) {
            throw new IllegalArgumentException("timeout can't be negative");
        }
        channel.readTimeout(timeout);
    }

    @Override
    public int getSoTimeout() throws SocketException {
        checkOpen();
        return channel.readTimeout();
    }

    @Override
    public void setSendBufferSize(int size) throws SocketException {
        if (size <= 0) {
            throw new IllegalArgumentException("Invalid send size");
        }
        set(StandardSocketOptions.SO_SNDBUF, size);
    }

    @Override
    public int getSendBufferSize() throws SocketException {
        return get(StandardSocketOptions.SO_SNDBUF);
    }

    @Override
    public void setReceiveBufferSize(int size) throws SocketException {
        if (size <= 0) {
            throw new IllegalArgumentException("Invalid receive size");
        }
        set(StandardSocketOptions.SO_RCVBUF, size);
    }

    @Override
    public int getReceiveBufferSize() throws SocketException {
        return get(StandardSocketOptions.SO_RCVBUF);
    }

    @Override
    public void setKeepAlive(boolean on) throws SocketException {
        set(StandardSocketOptions.SO_KEEPALIVE, on);
    }

    @Override
    public boolean getKeepAlive() throws SocketException {
        return get(StandardSocketOptions.SO_KEEPALIVE);
    }

    @Override
    public void setTrafficClass(int tc) throws SocketException {
        set(StandardSocketOptions.IP_TOS, tc);
    }

    @Override
    public int getTrafficClass() throws SocketException {
        return get(StandardSocketOptions.IP_TOS);
    }

    @Override
    public void setReuseAddress(boolean on) throws SocketException {
        set(StandardSocketOptions.SO_REUSEADDR, on);
    }

    @Override
    public boolean getReuseAddress() throws SocketException {
        return get(StandardSocketOptions.SO_REUSEADDR);
    }

    @Override
    public void close() throws IOException {
        channel.close();
    }

    @Override
    public void shutdownInput() throws IOException {
        try {
            channel.shutdownInput();
        } catch (Exception e) {
            throw Translate.exception(e);
        }
    }

    @Override
    public void shutdownOutput() throws IOException {
        try {
            channel.shutdownOutput();
        } catch (Exception e) {
            throw Translate.exception(e);
        }
    }

    @Override
    public boolean isConnected() {
        return channel.isConnected();
    }

    @Override
    public boolean isBound() {
        return channel.localAddress() != null;
    }

    @Override
    public boolean isClosed() {
        return !channel.isOpen();
    }

    @Override
    public boolean isInputShutdown() {
        return !channel.isInputOpen();
    }

    @Override
    public boolean isOutputShutdown() {
        return !channel.isOutputOpen();
    }

    @Override
    public void setPerformancePreferences(int connectionTime, int latency, int bandwidth) {
        // no effect, as with the JDK
    }

    @Override
    public <T> Socket setOption(SocketOption<T> name, T value) throws IOException {
        try {
            channel.setOption(name, value);
        } catch (IllegalArgumentException | UnsupportedOperationException | NullPointerException e) {
            throw e;
        } catch (Exception e) {
            throw Translate.exception(e);
        }
        return this;
    }

    @Override
    public <T> T getOption(SocketOption<T> name) throws IOException {
        try {
            return channel.getOption(name);
        } catch (UnsupportedOperationException | NullPointerException e) {
            throw e;
        } catch (Exception e) {
            throw Translate.exception(e);
        }
    }

    @Override
    public Set<SocketOption<?>> supportedOptions() {
        return channel.supportedOptions();
    }

    @Override
    public String toString() {
        if (channel.isConnected()) {
            return "Socket[addr=" + getInetAddress() + ",port=" + getPort() + ",localport=" + getLocalPort() + "]";
        }
        return "Socket[unconnected]";
    }
}
