package dev.hadronio.examples.hosts;

import io.netty.bootstrap.Bootstrap;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.channel.Channel;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.channel.ChannelInitializer;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.nio.NioEventLoopGroup;
import io.netty.channel.socket.nio.NioSocketChannel;
import java.net.InetSocketAddress;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.zip.CRC32;
import org.apache.zookeeper.CreateMode;
import org.apache.zookeeper.Watcher;
import org.apache.zookeeper.ZooDefs;
import org.apache.zookeeper.ZooKeeper;

/**
 * Real libraries across hosts, both ends on the provider: a netty echo, the JDK's HttpServer and
 * HttpClient, ZooKeeper. Every answer is checked, and hadroNIO's counters show that the
 * connections the client made moved to UCX over the network.
 */
final class AppChecks {
    static final int NETTY_CONNECTIONS = 4;
    static final int NETTY_BYTES = 16 << 20;
    static final int NETTY_CHUNK = 64 * 1024;
    static final int HTTP_REQUESTS = 100;
    static final int ZNODES = 100;

    private AppChecks() {
    }

    static List<Check> all(Target target) {
        return Arrays.asList(
            new Check("nettyEcho", "netty echo, 4 x 16 MiB, CRC-32", 600, () -> netty(target)),
            new Check("httpServerAndClient", "JDK HttpServer and HttpClient, " + HTTP_REQUESTS + " requests", 300, () -> http(target)),
            new Check("zookeeper", "ZooKeeper 3.8, " + ZNODES + " znodes written and read", 300, () -> zookeeper(target)));
    }

    /** Fails unless every connection this JVM made since {@code before} moved to UCX over the network. */
    static String upgradedSince(Map<String, Long> before) {
        long connections = Hadronio.grown(before, "Connections");
        long upgraded = Hadronio.grown(before, "UpgradesNetwork");
        if (connections == 0 || upgraded != connections) {
            throw new IllegalStateException(upgraded + " of " + connections + " connections moved to UCX over the network");
        }
        return connections + " of " + connections + " connections on UCX over the network";
    }

    private static String netty(Target target) throws Exception {
        Map<String, Long> before = Hadronio.counters();
        EventLoopGroup group = new NioEventLoopGroup(2);
        try {
            List<Echoed> echoes = new ArrayList<>();
            for (int i = 0; i < NETTY_CONNECTIONS; i++) {
                Echoed echoed = new Echoed(i);
                echoes.add(echoed);
                echoed.channel = new Bootstrap().group(group).channel(NioSocketChannel.class).handler(new ChannelInitializer<Channel>() {
                    @Override
                    protected void initChannel(Channel channel) {
                        channel.pipeline().addLast(echoed);
                    }
                }).connect(target.at(HostServer.NETTY_ECHO)).sync().channel();
            }
            // Each connection has sent its first two chunks: its upgrade is under way. The bulk
            // follows once all have upgraded (over emulated RDMA that takes seconds; a connection
            // whose bytes were all echoed before then would close still on TCP).
            long deadline = System.nanoTime() + 60_000_000_000L;
            while (Hadronio.grown(before, "UpgradesNetwork") < NETTY_CONNECTIONS && System.nanoTime() < deadline) {
                Thread.sleep(50);
            }
            for (Echoed echoed : echoes) {
                echoed.release();
            }
            for (Echoed echoed : echoes) {
                if (!echoed.done.await(500, TimeUnit.SECONDS)) {
                    throw new IllegalStateException("connection " + echoed.index + ": " + echoed.received + " of " + NETTY_BYTES
                            + " bytes came back within 500 s");
                }
                if (echoed.failure != null) {
                    throw new IllegalStateException("connection " + echoed.index + ": " + echoed.failure, echoed.failure);
                }
                if (echoed.crc.getValue() != echoed.sentCrc) {
                    throw new IllegalStateException("connection " + echoed.index + ": the echo differs (CRC-32)");
                }
            }
        } finally {
            group.shutdownGracefully(0, 1, TimeUnit.SECONDS).await();
        }
        return (NETTY_CONNECTIONS * NETTY_BYTES >> 20) + " MiB echoed; " + upgradedSince(before);
    }

    /**
     * One netty connection: sends two chunks at once and the rest, once released, as the channel
     * takes them; checks what comes back.
     */
    private static final class Echoed extends ChannelInboundHandlerAdapter {
        final int index;
        final CountDownLatch done = new CountDownLatch(1);
        final CRC32 crc = new CRC32();
        final Random random;
        long sentCrc;
        long received;
        int sent;
        volatile Throwable failure;
        private final CRC32 sending = new CRC32();
        Channel channel;
        private ChannelHandlerContext context;
        private boolean released;

        Echoed(int index) {
            this.index = index;
            this.random = new Random(index);
        }

        @Override
        public void channelActive(ChannelHandlerContext context) {
            this.context = context;
            // Two writes: a client marks its upgrade at its second write.
            for (int i = 0; i < 2; i++) {
                sendChunk(context);
                context.flush();
            }
            send(context);
        }

        /** Lets the rest go (on the channel's event loop, where everything else of it runs). */
        void release() {
            channel.eventLoop().execute(() -> {
                released = true;
                if (context != null) {
                    send(context);
                }
            });
        }

        @Override
        public void channelWritabilityChanged(ChannelHandlerContext context) {
            send(context);
        }

        private void send(ChannelHandlerContext context) {
            if (!released) {
                return;
            }
            while (sent < NETTY_BYTES && context.channel().isWritable()) {
                sendChunk(context);
            }
            context.flush();
        }

        private void sendChunk(ChannelHandlerContext context) {
            byte[] chunk = new byte[NETTY_CHUNK];
            random.nextBytes(chunk);
            sending.update(chunk);
            sent += chunk.length;
            context.write(Unpooled.wrappedBuffer(chunk));
            if (sent == NETTY_BYTES) {
                sentCrc = sending.getValue();
            }
        }

        @Override
        public void channelRead(ChannelHandlerContext context, Object message) {
            ByteBuf buffer = (ByteBuf) message;
            try {
                received += buffer.readableBytes();
                crc.update(buffer.nioBuffer());
            } finally {
                buffer.release();
            }
            if (received >= NETTY_BYTES) {
                context.close();
                done.countDown();
            }
        }

        @Override
        public void exceptionCaught(ChannelHandlerContext context, Throwable cause) {
            failure = cause;
            context.close();
            done.countDown();
        }
    }

    private static String http(Target target) throws Exception {
        Map<String, Long> before = Hadronio.counters();
        InetSocketAddress server = target.at(HostServer.HTTP);
        String base = "http://" + server.getAddress().getHostAddress() + ":" + server.getPort();
        HttpClient client = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).connectTimeout(Duration.ofSeconds(30)).build();
        int[] sizes = {1, 1000, 16 * 1024, 100_000, 1 << 20};
        Random random = new Random(42);
        long bytes = 0;
        for (int i = 0; i < HTTP_REQUESTS; i++) {
            if (i % 2 == 0) {
                HttpResponse<byte[]> response = client.send(HttpRequest.newBuilder(URI.create(base + "/hello"))
                        .timeout(Duration.ofSeconds(60)).build(), HttpResponse.BodyHandlers.ofByteArray());
                if (response.statusCode() != 200 || !Arrays.equals(response.body(), HostServer.HELLO)) {
                    throw new IllegalStateException("GET /hello " + i + ": " + response.statusCode() + " "
                            + new String(response.body(), StandardCharsets.US_ASCII));
                }
            } else {
                byte[] body = new byte[sizes[(i / 2) % sizes.length]];
                random.nextBytes(body);
                HttpResponse<byte[]> response = client.send(HttpRequest.newBuilder(URI.create(base + "/echo"))
                        .timeout(Duration.ofSeconds(60)).POST(HttpRequest.BodyPublishers.ofByteArray(body)).build(),
                        HttpResponse.BodyHandlers.ofByteArray());
                if (response.statusCode() != 200 || !Arrays.equals(response.body(), body)) {
                    throw new IllegalStateException("POST /echo " + i + " of " + body.length + " bytes: status " + response.statusCode()
                            + ", " + response.body().length + " bytes back" + (response.statusCode() == 200 ? ", not the same" : ""));
                }
                bytes += body.length;
            }
        }
        return String.format(Locale.ROOT, "%d answers checked (%.1f MiB echoed); %s", HTTP_REQUESTS, bytes / 1048576.0, upgradedSince(before));
    }

    @SuppressWarnings("try")
    private static String zookeeper(Target target) throws Exception {
        Map<String, Long> before = Hadronio.counters();
        InetSocketAddress server = target.at(HostServer.ZOOKEEPER);
        CountDownLatch connected = new CountDownLatch(1);
        ZooKeeper zookeeper = new ZooKeeper(server.getAddress().getHostAddress() + ":" + server.getPort(), 30_000, event -> {
            if (event.getState() == Watcher.Event.KeeperState.SyncConnected) {
                connected.countDown();
            }
        });
        try {
            if (!connected.await(60, TimeUnit.SECONDS)) {
                throw new IllegalStateException("the ZooKeeper client did not connect within 60 s");
            }
            String root = "/hadronio-hosts-" + System.nanoTime();
            zookeeper.create(root, new byte[0], ZooDefs.Ids.OPEN_ACL_UNSAFE, CreateMode.PERSISTENT);
            List<CompletableFuture<Void>> writes = new ArrayList<>();
            for (int i = 0; i < ZNODES; i++) {
                byte[] data = ("znode " + i + " " + "x".repeat(i * 10)).getBytes(StandardCharsets.UTF_8);
                CompletableFuture<Void> written = new CompletableFuture<>();
                zookeeper.create(root + "/" + i, data, ZooDefs.Ids.OPEN_ACL_UNSAFE, CreateMode.PERSISTENT, (rc, path, context, name) -> {
                    if (rc == 0) {
                        written.complete(null);
                    } else {
                        written.completeExceptionally(new IllegalStateException("create " + path + ": code " + rc));
                    }
                }, null);
                writes.add(written);
            }
            CompletableFuture.allOf(writes.toArray(new CompletableFuture<?>[0])).get(120, TimeUnit.SECONDS);
            for (int i = 0; i < ZNODES; i++) {
                byte[] expected = ("znode " + i + " " + "x".repeat(i * 10)).getBytes(StandardCharsets.UTF_8);
                byte[] data = zookeeper.getData(root + "/" + i, false, null);
                if (!Arrays.equals(data, expected)) {
                    throw new IllegalStateException("znode " + i + " reads back other data");
                }
            }
            List<String> children = zookeeper.getChildren(root, false);
            if (children.size() != ZNODES) {
                throw new IllegalStateException(root + " has " + children.size() + " children, not " + ZNODES);
            }
            for (String child : children) {
                zookeeper.delete(root + "/" + child, -1);
            }
            zookeeper.delete(root, -1);
        } finally {
            zookeeper.close();
        }
        return ZNODES + " znodes created, read back and deleted; " + upgradedSince(before);
    }
}
