package dev.hadronio.compat;

import io.netty.bootstrap.ServerBootstrap;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.channel.Channel;
import io.netty.channel.ChannelFutureListener;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.channel.ChannelInitializer;
import io.netty.channel.ChannelOption;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.nio.NioEventLoopGroup;
import io.netty.channel.socket.ChannelInputShutdownEvent;
import io.netty.channel.socket.SocketChannel;
import io.netty.channel.socket.nio.NioServerSocketChannel;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The server half of the netty echo bar: a plain netty NIO server that writes back every byte it reads,
 * with back-pressure (stops reading while its outbound buffer is above the high-water mark), and closes a
 * connection once the client has half-closed it and everything has been echoed.
 *
 * <p>Prints {@code READY port=P}, serves until standard input ends (the supervisor's stop signal), prints
 * its counts and exits 1 if any connection failed with an exception.
 */
public final class NettyEchoServer {
    private static final AtomicInteger CONNECTIONS = new AtomicInteger();
    private static final AtomicInteger ERRORS = new AtomicInteger();
    private static final AtomicLong BYTES = new AtomicLong();

    private NettyEchoServer() {
    }

    public static void main(String[] args) throws InterruptedException {
        CompatChild.start("echo-server", false);
        EventLoopGroup boss = new NioEventLoopGroup(1);
        EventLoopGroup workers = new NioEventLoopGroup(2);
        try {
            Channel server = new ServerBootstrap()
                    .group(boss, workers)
                    .channel(NioServerSocketChannel.class)
                    .option(ChannelOption.SO_BACKLOG, 128)
                    .childOption(ChannelOption.ALLOW_HALF_CLOSURE, true)
                    .childOption(ChannelOption.TCP_NODELAY, true)
                    .childHandler(new ChannelInitializer<SocketChannel>() {
                        @Override
                        protected void initChannel(SocketChannel ch) {
                            ch.pipeline().addLast(new EchoHandler());
                        }
                    })
                    .bind(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0)).sync().channel();
            System.out.println("READY port=" + ((InetSocketAddress) server.localAddress()).getPort());
            System.out.flush();
            CompatChild.awaitStdinEof();
            server.close().sync();
        } finally {
            boss.shutdownGracefully(0, 2, TimeUnit.SECONDS);
            workers.shutdownGracefully(0, 2, TimeUnit.SECONDS).await(10_000);
        }
        System.out.println("echo server: " + CONNECTIONS.get() + " connections, " + BYTES.get() + " bytes echoed, "
                + ERRORS.get() + " errors");
        System.out.flush();
        System.exit(ERRORS.get() == 0 ? 0 : 1);
    }

    private static final class EchoHandler extends ChannelInboundHandlerAdapter {
        @Override
        public void channelActive(ChannelHandlerContext ctx) {
            CONNECTIONS.incrementAndGet();
        }

        @Override
        public void channelRead(ChannelHandlerContext ctx, Object msg) {
            BYTES.addAndGet(((ByteBuf) msg).readableBytes());
            ctx.write(msg);
            if (!ctx.channel().isWritable()) {
                // Stop reading first: the flush may make the channel writable again, and then
                // channelWritabilityChanged turns reading back on.
                ctx.channel().config().setAutoRead(false);
                ctx.flush();
            }
        }

        @Override
        public void channelReadComplete(ChannelHandlerContext ctx) {
            ctx.flush();
        }

        @Override
        public void channelWritabilityChanged(ChannelHandlerContext ctx) {
            if (ctx.channel().isWritable()) {
                ctx.channel().config().setAutoRead(true);
            }
            ctx.fireChannelWritabilityChanged();
        }

        @Override
        public void userEventTriggered(ChannelHandlerContext ctx, Object evt) {
            if (evt instanceof ChannelInputShutdownEvent) {
                // The client sent everything: close once everything queued before this point is written.
                ctx.writeAndFlush(Unpooled.EMPTY_BUFFER).addListener(ChannelFutureListener.CLOSE);
            }
            ctx.fireUserEventTriggered(evt);
        }

        @Override
        public void exceptionCaught(ChannelHandlerContext ctx, Throwable cause) {
            ERRORS.incrementAndGet();
            System.out.println("echo server: " + ctx.channel() + ": " + cause);
            ctx.close();
        }
    }
}
