package dev.hadronio.compat;

import io.netty.bootstrap.Bootstrap;
import io.netty.buffer.ByteBuf;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.channel.ChannelOption;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.nio.NioEventLoopGroup;
import io.netty.channel.socket.SocketChannel;
import io.netty.channel.socket.nio.NioSocketChannel;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.zip.CRC32;

/**
 * The client half of the netty echo bar: opens {@code CONNECTIONS} netty NIO connections to
 * {@link NettyEchoServer} at once, streams {@code TOTAL_BYTES} (split evenly) of pseudo-random chunks of
 * random length through them, half-closes each connection when its share is written, and checks that the
 * echoed stream has the same length and CRC-32 as the one sent and ends with the server's close.
 *
 * <p>Usage: {@code NettyEchoClient PORT CONNECTIONS TOTAL_BYTES}. Ends with
 * {@code netty echo: N passed, N failed} (one check per connection); exit status 1 on any failure.
 */
public final class NettyEchoClient {
    private static final int PATTERN_LENGTH = 1 << 20;
    private static final int MAX_CHUNK = 64 << 10;

    private NettyEchoClient() {
    }

    public static void main(String[] args) throws InterruptedException {
        CompatChild.start("echo-client", true);
        int port = Integer.parseInt(args[0]);
        int connections = Integer.parseInt(args[1]);
        long total = Long.parseLong(args[2]);
        if (connections < 1 || total < connections) {
            throw new IllegalArgumentException("need at least one connection and one byte per connection");
        }
        byte[] pattern = Payload.random(0x5eedL, PATTERN_LENGTH + MAX_CHUNK);
        InetSocketAddress server = new InetSocketAddress(InetAddress.getLoopbackAddress(), port);
        EventLoopGroup group = new NioEventLoopGroup(2);
        int failed = 0;
        long start = System.nanoTime();
        // Give up a little before the supervisor's deadline, so that the progress of each connection is printed.
        long waitUntil = Long.getLong(CompatChild.DEADLINE_PROPERTY, System.currentTimeMillis() + 600_000) - 10_000;
        try {
            Bootstrap bootstrap = new Bootstrap()
                    .group(group)
                    .channel(NioSocketChannel.class)
                    .option(ChannelOption.TCP_NODELAY, true)
                    .option(ChannelOption.CONNECT_TIMEOUT_MILLIS, 10_000);
            List<Connection> all = new ArrayList<>();
            for (int i = 0; i < connections; i++) {
                long share = total / connections + (i < total % connections ? 1 : 0);
                Connection connection = new Connection(i, share, pattern);
                all.add(connection);
                bootstrap.clone().handler(connection).connect(server).addListener(future -> {
                    if (!future.isSuccess()) {
                        connection.result.complete("connect failed: " + future.cause());
                    }
                });
            }
            for (Connection connection : all) {
                String error;
                try {
                    error = connection.result.get(Math.max(1, waitUntil - System.currentTimeMillis()),
                            TimeUnit.MILLISECONDS);
                } catch (TimeoutException | ExecutionException e) {
                    error = "no result: " + e + " (" + connection.progress() + ")";
                }
                if (error != null) {
                    failed++;
                    System.out.println("FAIL connection " + connection.id + ": " + error);
                }
            }
        } finally {
            group.shutdownGracefully(0, 2, TimeUnit.SECONDS).await(10_000);
        }
        double seconds = (System.nanoTime() - start) / 1e9;
        System.out.println(String.format("netty echo: %d passed, %d failed (%d connections, %d bytes each way, "
                + "CRC-32 checked, %.2f s, %.0f MB/s each way)", connections - failed, failed, connections, total,
                seconds, total / seconds / 1e6));
        System.out.flush();
        System.exit(failed == 0 ? 0 : 1);
    }

    /** One connection: writes its share with back-pressure, checks what comes back. */
    private static final class Connection extends ChannelInboundHandlerAdapter {
        final int id;
        final CompletableFuture<String> result = new CompletableFuture<>();
        private final long total;
        private final byte[] pattern;
        private final SplittableRandom random;
        private final CRC32 sentCrc = new CRC32();
        private final CRC32 receivedCrc = new CRC32();
        private volatile long sent;
        private volatile long received;

        Connection(int id, long total, byte[] pattern) {
            this.id = id;
            this.total = total;
            this.pattern = pattern;
            this.random = new SplittableRandom(id);
        }

        String progress() {
            return sent + " of " + total + " bytes sent, " + received + " received";
        }

        @Override
        public void channelActive(ChannelHandlerContext ctx) {
            pump(ctx);
        }

        @Override
        public void channelWritabilityChanged(ChannelHandlerContext ctx) {
            if (ctx.channel().isWritable()) {
                pump(ctx);
            }
        }

        private void pump(ChannelHandlerContext ctx) {
            while (sent < total && ctx.channel().isWritable()) {
                int length = (int) Math.min(1 + random.nextInt(MAX_CHUNK), total - sent);
                int offset = random.nextInt(PATTERN_LENGTH);
                ByteBuf chunk = ctx.alloc().directBuffer(length).writeBytes(pattern, offset, length);
                sentCrc.update(pattern, offset, length);
                sent += length;
                if (sent == total) {
                    // Half-close only after the last byte is written: shutdownOutput fails pending writes.
                    ctx.writeAndFlush(chunk).addListener(written -> {
                        if (written.isSuccess()) {
                            ((SocketChannel) ctx.channel()).shutdownOutput().addListener(shut -> {
                                if (!shut.isSuccess()) {
                                    result.complete("shutdownOutput failed: " + shut.cause());
                                }
                            });
                        }
                    });
                    return;
                }
                ctx.write(chunk);
            }
            ctx.flush();
        }

        @Override
        public void channelRead(ChannelHandlerContext ctx, Object msg) {
            ByteBuf buf = (ByteBuf) msg;
            try {
                received += buf.readableBytes();
                for (ByteBuffer nio : buf.nioBuffers()) {
                    receivedCrc.update(nio);
                }
            } finally {
                buf.release();
            }
            if (received > total) {
                result.complete("received " + received + " bytes, more than the " + total + " sent");
                ctx.close();
            }
        }

        @Override
        public void channelInactive(ChannelHandlerContext ctx) {
            if (sent != total || received != total) {
                result.complete("closed early: " + progress());
            } else if (sentCrc.getValue() != receivedCrc.getValue()) {
                result.complete(String.format("CRC-32 of the echoed stream %08x, of the sent stream %08x",
                        receivedCrc.getValue(), sentCrc.getValue()));
            } else {
                result.complete(null);
            }
        }

        @Override
        public void exceptionCaught(ChannelHandlerContext ctx, Throwable cause) {
            result.complete("exception: " + cause + " (" + progress() + ")");
            ctx.close();
        }
    }
}
