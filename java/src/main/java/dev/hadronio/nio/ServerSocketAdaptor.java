package dev.hadronio.nio;

import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.SocketAddress;
import java.net.SocketException;
import java.net.SocketOption;
import java.net.StandardSocketOptions;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.util.Set;

/** The {@link ServerSocket} view of a {@link HadronioServerSocketChannel}. */
final class ServerSocketAdaptor extends ServerSocket {
    private final HadronioServerSocketChannel channel;

    ServerSocketAdaptor(HadronioServerSocketChannel channel) throws IOException {
        this.channel = channel;
    }

    @Override
    public ServerSocketChannel getChannel() {
        return channel;
    }

    @Override
    public void bind(SocketAddress local) throws IOException {
        bind(local, 50);
    }

    @Override
    public void bind(SocketAddress local, int backlog) throws IOException {
        try {
            channel.bind(local, backlog);
        } catch (Exception e) {
            throw Translate.exception(e);
        }
    }

    @Override
    public InetAddress getInetAddress() {
        InetSocketAddress local = channel.localAddress();
        return local == null ? null : local.getAddress();
    }

    @Override
    public int getLocalPort() {
        InetSocketAddress local = channel.localAddress();
        return local == null ? -1 : local.getPort();
    }

    @Override
    public SocketAddress getLocalSocketAddress() {
        return channel.localAddress();
    }

    @Override
    public Socket accept() throws IOException {
        try {
            SocketChannel accepted = channel.accept(true);
            if (accepted == null) {
                throw new java.net.SocketTimeoutException("Accept timed out");
            }
            return accepted.socket();
        } catch (Exception e) {
            throw Translate.exception(e);
        }
    }

    @Override
    public void close() throws IOException {
        channel.close();
    }

    @Override
    public boolean isBound() {
        return channel.localAddress() != null;
    }

    @Override
    public boolean isClosed() {
        return !channel.isOpen();
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
            throw new IllegalArgumentException("timeout < 0");
        }
        channel.acceptTimeout(timeout);
    }

    @Override
    public int getSoTimeout() throws IOException {
        checkOpen();
        return channel.acceptTimeout();
    }

    @Override
    public void setReuseAddress(boolean on) throws SocketException {
        try {
            channel.setOption(StandardSocketOptions.SO_REUSEADDR, on);
        } catch (IOException e) {
            throw socketException(e);
        }
    }

    @Override
    public boolean getReuseAddress() throws SocketException {
        try {
            return channel.getOption(StandardSocketOptions.SO_REUSEADDR);
        } catch (IOException e) {
            throw socketException(e);
        }
    }

    @Override
    public void setReceiveBufferSize(int size) throws SocketException {
        if (size <= 0) {
            throw new IllegalArgumentException("size cannot be 0 or negative");
        }
        try {
            channel.setOption(StandardSocketOptions.SO_RCVBUF, size);
        } catch (IOException e) {
            throw socketException(e);
        }
    }

    @Override
    public int getReceiveBufferSize() throws SocketException {
        try {
            return channel.getOption(StandardSocketOptions.SO_RCVBUF);
        } catch (IOException e) {
            throw socketException(e);
        }
    }

    private static SocketException socketException(IOException e) {
        IOException translated = Translate.exception(e);
        if (translated instanceof SocketException) {
            return (SocketException) translated;
        }
        SocketException exception = new SocketException(translated.getMessage());
        exception.initCause(e);
        return exception;
    }

    @Override
    public void setPerformancePreferences(int connectionTime, int latency, int bandwidth) {
        // no effect, as with the JDK
    }

    @Override
    public <T> ServerSocket setOption(SocketOption<T> name, T value) throws IOException {
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
        InetSocketAddress local = channel.localAddress();
        if (local == null) {
            return "ServerSocket[unbound]";
        }
        return "ServerSocket[addr=" + local.getAddress() + ",localport=" + local.getPort() + "]";
    }
}
