package dev.hadronio.examples.apps;

import java.io.IOException;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.util.function.Consumer;

/**
 * A thread-per-connection echo server with blocking channels: the server of the stream and the
 * virtual-thread apps, which differ in the threads they run it on.
 */
final class EchoServer implements App.Server {
    private final ServerSocketChannel listener;

    private EchoServer(ServerSocketChannel listener) {
        this.listener = listener;
    }

    /**
     * Listens on {@code address}; the accept loop and each connection's echo loop (with a buffer
     * of {@code bufferLength} bytes) run on threads that {@code start} starts.
     */
    static EchoServer start(InetSocketAddress address, int backlog, int bufferLength, Consumer<Runnable> start)
            throws IOException {
        ServerSocketChannel listener = ServerSocketChannel.open();
        listener.bind(address, backlog);
        start.accept(() -> {
            try {
                while (true) {
                    SocketChannel channel = listener.accept();
                    start.accept(() -> echo(channel, bufferLength));
                }
            } catch (IOException e) {
                // closed
            }
        });
        return new EchoServer(listener);
    }

    private static void echo(SocketChannel channel, int bufferLength) {
        ByteBuffer buffer = ByteBuffer.allocateDirect(bufferLength);
        try (SocketChannel c = channel) {
            while (c.read(buffer) >= 0) {
                buffer.flip();
                while (buffer.hasRemaining()) {
                    c.write(buffer);
                }
                buffer.clear();
            }
        } catch (IOException e) {
            // the client went
        }
    }

    @Override
    public int port() {
        return ((InetSocketAddress) listener.socket().getLocalSocketAddress()).getPort();
    }

    @Override
    public void close() throws IOException {
        listener.close();
    }
}
