package dev.hadronio.examples.netty;

import io.netty.bootstrap.Bootstrap;
import io.netty.channel.Channel;
import io.netty.channel.ChannelFuture;
import io.netty.channel.ChannelHandler;
import io.netty.channel.ChannelInitializer;
import io.netty.channel.ChannelPipeline;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.socket.SocketChannel;
import io.netty.channel.socket.nio.NioSocketChannel;
import io.netty.handler.codec.LineBasedFrameDecoder;
import io.netty.handler.codec.string.StringDecoder;
import io.netty.handler.codec.string.StringEncoder;

import java.io.IOException;
import java.net.ConnectException;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.function.Supplier;

import dev.hadronio.examples.transport.Connect;

/** Shared pieces of the line-based netty examples. */
final class Lines {

    static final int MAX_LINE = 64 * 1024;
    static final Duration CONNECT_PATIENCE = Duration.ofSeconds(30);

    private Lines() {
    }

    /** UTF-8 lines in, strings out (the caller appends the newline). */
    static void addCodec(ChannelPipeline p) {
        p.addLast(new LineBasedFrameDecoder(MAX_LINE));
        p.addLast(new StringDecoder(StandardCharsets.UTF_8));
        p.addLast(new StringEncoder(StandardCharsets.UTF_8));
    }

    /** Connects a line-based client whose last handler is a fresh {@code handler.get()} (one per attempt). */
    static Channel connect(EventLoopGroup group, InetSocketAddress remote, Supplier<ChannelHandler> handler)
            throws IOException {
        Bootstrap bootstrap = new Bootstrap()
                .group(group)
                .channel(NioSocketChannel.class)
                .handler(new ChannelInitializer<SocketChannel>() {
                    @Override
                    protected void initChannel(SocketChannel ch) {
                        addCodec(ch.pipeline());
                        ch.pipeline().addLast(handler.get());
                    }
                });
        return Connect.withRetry(remote, CONNECT_PATIENCE, () -> {
            ChannelFuture f = bootstrap.connect(remote).awaitUninterruptibly();
            if (!f.isSuccess()) {
                if (f.cause() instanceof ConnectException) {
                    throw (ConnectException) f.cause();
                }
                throw new IOException("cannot connect to " + remote + ": " + f.cause(), f.cause());
            }
            return f.channel();
        });
    }
}
