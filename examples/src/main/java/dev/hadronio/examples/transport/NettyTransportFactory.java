package dev.hadronio.examples.transport;

import io.netty.bootstrap.Bootstrap;
import io.netty.bootstrap.ServerBootstrap;
import io.netty.channel.Channel;
import io.netty.channel.ChannelFuture;
import io.netty.channel.ChannelInitializer;
import io.netty.channel.ChannelOption;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.nio.NioEventLoopGroup;
import io.netty.channel.socket.SocketChannel;
import io.netty.channel.socket.nio.NioServerSocketChannel;
import io.netty.channel.socket.nio.NioSocketChannel;

import java.io.IOException;
import java.io.InterruptedIOException;
import java.net.ConnectException;
import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;

/**
 * netty NIO channels. netty's NioEventLoopGroup opens its selectors through {@code SelectorProvider.provider()},
 * so the JVM-wide provider property applies to it like to any other application.
 */
final class NettyTransportFactory implements TransportFactory {

    private final int threads;
    private final EventLoopGroup workers;
    private EventLoopGroup boss;

    NettyTransportFactory(int threads) {
        this.threads = threads;
        this.workers = new NioEventLoopGroup(threads);
    }

    @Override
    public MessageTransport connect(InetSocketAddress remote, Duration patience) throws IOException {
        Bootstrap bootstrap = new Bootstrap()
                .group(workers)
                .channel(NioSocketChannel.class)
                .option(ChannelOption.TCP_NODELAY, Boolean.TRUE)
                .handler(new Initializer(null));
        Channel channel = Connect.withRetry(remote, patience, () -> {
            ChannelFuture future = bootstrap.connect(remote).awaitUninterruptibly();
            if (!future.isSuccess()) {
                Throwable cause = future.cause();
                if (cause instanceof ConnectException) {
                    throw (ConnectException) cause;
                }
                throw new IOException("cannot connect to " + remote + ": " + cause, cause);
            }
            return future.channel();
        });
        return new NettyTransport(channel, channel.pipeline().get(NettyBenchHandler.class));
    }

    @Override
    public synchronized TransportListener listen(InetSocketAddress local) throws IOException {
        if (boss == null) {
            boss = new NioEventLoopGroup(1);
        }
        BlockingQueue<MessageTransport> accepted = new LinkedBlockingQueue<>();
        ChannelFuture bound = new ServerBootstrap()
                .group(boss, workers)
                .channel(NioServerSocketChannel.class)
                .option(ChannelOption.SO_REUSEADDR, Boolean.TRUE)
                .childOption(ChannelOption.TCP_NODELAY, Boolean.TRUE)
                .childHandler(new Initializer(accepted))
                .bind(local)
                .awaitUninterruptibly();
        if (!bound.isSuccess()) {
            throw new IOException("cannot listen on " + local + ": " + bound.cause().getMessage(), bound.cause());
        }
        Channel server = bound.channel();
        return new TransportListener() {
            @Override
            public MessageTransport accept() throws IOException {
                try {
                    return accepted.take();
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    throw new InterruptedIOException("interrupted while accepting on " + local);
                }
            }

            @Override
            public InetSocketAddress localAddress() {
                return (InetSocketAddress) server.localAddress();
            }

            @Override
            public void close() {
                server.close().awaitUninterruptibly();
            }
        };
    }

    @Override
    public synchronized void close() {
        if (boss != null) {
            boss.shutdownGracefully(0, 2, TimeUnit.SECONDS).awaitUninterruptibly();
        }
        workers.shutdownGracefully(0, 2, TimeUnit.SECONDS).awaitUninterruptibly();
    }

    @Override
    public String toString() {
        return "netty (" + threads + " event loop threads)";
    }

    /** Puts a fresh benchmark handler on each channel and, on a server, queues the accepted connection. */
    private static final class Initializer extends ChannelInitializer<SocketChannel> {

        private final BlockingQueue<MessageTransport> accepted;

        Initializer(BlockingQueue<MessageTransport> accepted) {
            this.accepted = accepted;
        }

        @Override
        protected void initChannel(SocketChannel channel) {
            NettyBenchHandler handler = new NettyBenchHandler();
            channel.pipeline().addLast(handler);
            if (accepted != null) {
                accepted.add(new NettyTransport(channel, handler));
            }
        }
    }
}
