package dev.hadronio.examples.netty;

import io.netty.bootstrap.ServerBootstrap;
import io.netty.channel.Channel;
import io.netty.channel.ChannelFuture;
import io.netty.channel.ChannelFutureListener;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInitializer;
import io.netty.channel.ChannelOption;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.SimpleChannelInboundHandler;
import io.netty.channel.nio.NioEventLoopGroup;
import io.netty.channel.socket.SocketChannel;
import io.netty.channel.socket.nio.NioServerSocketChannel;

import java.io.IOException;
import java.io.PrintStream;
import java.net.InetSocketAddress;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.UnaryOperator;

/**
 * A netty server for line-based text: answers every line with {@code reply(line)}, optionally closes the
 * connection after the first answer, and stops after {@code clients} connections have closed.
 */
final class LineServer {

    private final InetSocketAddress address;
    private final int threads;
    private final int clients;
    private final UnaryOperator<String> reply;
    private final boolean closeAfterReply;
    private final PrintStream out;

    LineServer(InetSocketAddress address, int threads, int clients, UnaryOperator<String> reply,
               boolean closeAfterReply, PrintStream out) {
        this.address = address;
        this.threads = threads;
        this.clients = clients;
        this.reply = reply;
        this.closeAfterReply = closeAfterReply;
        this.out = out;
    }

    /** Serves until {@code clients} connections have come and gone. */
    void run() throws IOException {
        EventLoopGroup boss = new NioEventLoopGroup(1);
        EventLoopGroup workers = new NioEventLoopGroup(threads);
        try {
            AtomicInteger remaining = new AtomicInteger(clients);
            Channel[] server = new Channel[1];
            ChannelFuture bound = new ServerBootstrap()
                    .group(boss, workers)
                    .channel(NioServerSocketChannel.class)
                    .option(ChannelOption.SO_REUSEADDR, Boolean.TRUE)
                    .childHandler(new ChannelInitializer<SocketChannel>() {
                        @Override
                        protected void initChannel(SocketChannel ch) {
                            Lines.addCodec(ch.pipeline());
                            ch.pipeline().addLast(new Handler());
                            ch.closeFuture().addListener(f -> {
                                if (remaining.decrementAndGet() == 0) {
                                    server[0].close();
                                }
                            });
                        }
                    })
                    .bind(address).awaitUninterruptibly();
            if (!bound.isSuccess()) {
                throw new IOException("cannot listen on " + address + ": " + bound.cause().getMessage(),
                        bound.cause());
            }
            server[0] = bound.channel();
            out.println("Listening on " + server[0].localAddress() + " (serving " + clients + " client(s))");
            server[0].closeFuture().awaitUninterruptibly();
            out.println("Served " + clients + " client(s), exiting");
        } finally {
            boss.shutdownGracefully(0, 2, TimeUnit.SECONDS).awaitUninterruptibly();
            workers.shutdownGracefully(0, 2, TimeUnit.SECONDS).awaitUninterruptibly();
        }
    }

    private final class Handler extends SimpleChannelInboundHandler<String> {

        @Override
        public void channelActive(ChannelHandlerContext ctx) {
            out.println("Client connected: " + ctx.channel().remoteAddress());
            ctx.fireChannelActive();
        }

        @Override
        protected void channelRead0(ChannelHandlerContext ctx, String line) {
            out.println("Received: " + line);
            ChannelFuture written = ctx.writeAndFlush(reply.apply(line) + "\n");
            if (closeAfterReply) {
                written.addListener(ChannelFutureListener.CLOSE);
            }
        }

        @Override
        public void exceptionCaught(ChannelHandlerContext ctx, Throwable cause) {
            out.println("Connection " + ctx.channel().remoteAddress() + " failed: " + cause);
            ctx.close();
        }
    }
}
