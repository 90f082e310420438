package dev.hadronio.examples.transport;

import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.StandardSocketOptions;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.time.Duration;

/** Plain java.nio connections, blocking or selector-driven. */
final class ChannelTransportFactory implements TransportFactory {

    private static final int BACKLOG = 128;

    private final boolean selector;

    ChannelTransportFactory(boolean selector) {
        this.selector = selector;
    }

    @Override
    public MessageTransport connect(InetSocketAddress remote, Duration patience) throws IOException {
        SocketChannel channel = Connect.withRetry(remote, patience, () -> SocketChannel.open(remote));
        return wrap(channel);
    }

    @Override
    public TransportListener listen(InetSocketAddress local) throws IOException {
        ServerSocketChannel server = ServerSocketChannel.open();
        try {
            server.setOption(StandardSocketOptions.SO_REUSEADDR, Boolean.TRUE);
            server.bind(local, BACKLOG);
        } catch (IOException e) {
            server.close();
            throw new IOException("cannot listen on " + local + ": " + e.getMessage(), e);
        }
        return new TransportListener() {
            @Override
            public MessageTransport accept() throws IOException {
                return wrap(server.accept());
            }

            @Override
            public InetSocketAddress localAddress() throws IOException {
                return (InetSocketAddress) server.getLocalAddress();
            }

            @Override
            public void close() throws IOException {
                server.close();
            }
        };
    }

    private MessageTransport wrap(SocketChannel channel) throws IOException {
        try {
            return selector ? new SelectorTransport(channel) : new BlockingTransport(channel);
        } catch (IOException | RuntimeException e) {
            channel.close();
            throw e;
        }
    }

    @Override
    public void close() {
        // nothing shared
    }
}
