package dev.hadronio.examples.hosts;

import dev.hadronio.examples.report.BarPlot;
import dev.hadronio.examples.report.CsvFile;
import dev.hadronio.examples.report.TextTable;
import dev.hadronio.examples.report.Units;
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
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.SelectionKey;
import java.nio.channels.Selector;
import java.nio.channels.SocketChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

/**
 * {@code hadronio hosts bench}: figures between two hosts, both providers and {@code ucx_perftest}
 * in one run. A child JVM per provider measures the 64-byte round trip (median of
 * {@value #ROUND_TRIPS}) and streams of 64 KiB and 1 MiB writes (bytes until the server's sink
 * has them all), blocking, through a selector and with netty, against {@code hosts serve} (the
 * JDK's provider against the server on the JDK's provider); {@code ucx_perftest} runs
 * {@code tag_lat} 64 B and {@code tag_bw}/{@code stream_bw} at the stream sizes against a server
 * on the other host ({@code ucx_perftest -p PORT} there).
 */
@SuppressWarnings("try")
final class HostBench {
    static final int ROUND_TRIPS = 2000;
    static final int WARM_ROUND_TRIPS = 300;
    static final long STREAM_BYTES = 48L << 20;
    static final long WARM_BYTES = 8L << 20;
    static final int[] STREAM_SIZES = {64 * 1024, 1 << 20};
    static final String[] FLAVOURS = {"blocking", "selector", "netty"};
    /** The verbs transports the floor is measured over, as UCX_TLS aliases. */
    private static final String[] TRANSPORTS = {"rc_v", "ud_v"};

    private static final String FIGURE = "FIGURE ";

    private HostBench() {
    }

    // --- the child JVM: measures one provider ---------------------------------------------------

    /** In the child: measures against the server whose first port is {@code base.getPort()}, printing FIGURE lines. */
    static int measure(InetSocketAddress base, PrintStream out) throws Exception {
        InetSocketAddress echo = new InetSocketAddress(base.getAddress(), base.getPort() + HostServer.BLOCKING_ECHO);
        InetSocketAddress selectorEcho = new InetSocketAddress(base.getAddress(), base.getPort() + HostServer.SELECTOR_ECHO);
        InetSocketAddress nettyEcho = new InetSocketAddress(base.getAddress(), base.getPort() + HostServer.NETTY_ECHO);
        InetSocketAddress sink = new InetSocketAddress(base.getAddress(), base.getPort() + HostServer.SINK);
        try (Control control = Control.connect(base, 60_000)) {
            figure(out, "rtt.blocking", blockingRoundTrip(echo, out));
            figure(out, "rtt.selector", selectorRoundTrip(selectorEcho));
            figure(out, "rtt.netty", nettyRoundTrip(nettyEcho));
            for (int size : STREAM_SIZES) {
                figure(out, "stream" + size + ".blocking", stream(control, sink, size, false));
                figure(out, "stream" + size + ".selector", stream(control, sink, size, true));
                figure(out, "stream" + size + ".netty", nettyStream(control, sink, size));
            }
        }
        return 0;
    }

    private static void figure(PrintStream out, String name, double value) {
        out.println(FIGURE + name + " " + value);
        out.flush();
    }

    private static double median(long[] nanos) {
        long[] sorted = nanos.clone();
        Arrays.sort(sorted);
        return sorted[sorted.length / 2] / 1e3;
    }

    private static double blockingRoundTrip(InetSocketAddress echo, PrintStream out) throws IOException {
        try (SocketChannel channel = SocketChannel.open(echo)) {
            out.println("PATH " + Echo.decide(channel));
            ByteBuffer ping = ByteBuffer.allocateDirect(64);
            ByteBuffer pong = ByteBuffer.allocateDirect(64);
            long[] times = new long[ROUND_TRIPS];
            for (int i = -WARM_ROUND_TRIPS; i < ROUND_TRIPS; i++) {
                long start = System.nanoTime();
                ping.clear();
                while (ping.hasRemaining()) {
                    channel.write(ping);
                }
                pong.clear();
                while (pong.hasRemaining()) {
                    if (channel.read(pong) < 0) {
                        throw new IOException("end of stream");
                    }
                }
                if (i >= 0) {
                    times[i] = System.nanoTime() - start;
                }
            }
            return median(times);
        }
    }

    private static double selectorRoundTrip(InetSocketAddress echo) throws IOException {
        try (Selector selector = Selector.open(); SocketChannel channel = SocketChannel.open(echo)) {
            channel.configureBlocking(false);
            SelectionKey key = channel.register(selector, 0);
            ByteBuffer ping = ByteBuffer.allocateDirect(64);
            ByteBuffer pong = ByteBuffer.allocateDirect(64);
            long[] times = new long[ROUND_TRIPS];
            for (int i = -WARM_ROUND_TRIPS; i < ROUND_TRIPS; i++) {
                long start = System.nanoTime();
                ping.clear();
                channel.write(ping);
                key.interestOps(ping.hasRemaining() ? SelectionKey.OP_WRITE : SelectionKey.OP_READ);
                pong.clear();
                while (pong.hasRemaining()) {
                    selector.select();
                    selector.selectedKeys().clear();
                    if (ping.hasRemaining()) {
                        channel.write(ping);
                        key.interestOps(ping.hasRemaining() ? SelectionKey.OP_WRITE : SelectionKey.OP_READ);
                    } else if (channel.read(pong) < 0) {
                        throw new IOException("end of stream");
                    }
                }
                if (i >= 0) {
                    times[i] = System.nanoTime() - start;
                }
            }
            return median(times);
        }
    }

    /** netty round trips: each answer's arrival sends the next request. */
    private static double nettyRoundTrip(InetSocketAddress echo) throws Exception {
        EventLoopGroup group = new NioEventLoopGroup(1);
        try {
            long[] times = new long[ROUND_TRIPS];
            CompletableFuture<Void> done = new CompletableFuture<>();
            new Bootstrap().group(group).channel(NioSocketChannel.class).handler(new ChannelInitializer<Channel>() {
                @Override
                protected void initChannel(Channel channel) {
                    channel.pipeline().addLast(new ChannelInboundHandlerAdapter() {
                        int round = -WARM_ROUND_TRIPS;
                        int received;
                        long start;

                        @Override
                        public void channelActive(ChannelHandlerContext context) {
                            send(context);
                        }

                        private void send(ChannelHandlerContext context) {
                            start = System.nanoTime();
                            context.writeAndFlush(Unpooled.wrappedBuffer(new byte[64]));
                        }

                        @Override
                        public void channelRead(ChannelHandlerContext context, Object message) {
                            received += ((ByteBuf) message).readableBytes();
                            ((ByteBuf) message).release();
                            if (received < 64) {
                                return;
                            }
                            received -= 64;
                            if (round >= 0) {
                                times[round] = System.nanoTime() - start;
                            }
                            if (++round == ROUND_TRIPS) {
                                done.complete(null);
                                context.close();
                            } else {
                                send(context);
                            }
                        }

                        @Override
                        public void exceptionCaught(ChannelHandlerContext context, Throwable cause) {
                            done.completeExceptionally(cause);
                            context.close();
                        }
                    });
                }
            }).connect(echo).sync();
            done.get(600, TimeUnit.SECONDS);
            return median(times);
        } finally {
            group.shutdownGracefully(0, 1, TimeUnit.SECONDS).await();
        }
    }

    /** Waits until the sink received {@code bytes} on the connection from {@code port}. */
    private static void awaitSink(Control control, int port, long bytes) throws Exception {
        long deadline = System.nanoTime() + 600_000_000_000L;
        while (true) {
            String[] words = control.ask("sink " + port).split(" ");
            if (words[0].equals("bytes") && Long.parseLong(words[1]) >= bytes) {
                return;
            }
            if (System.nanoTime() > deadline) {
                throw new IOException("the sink did not receive " + bytes + " bytes in 600 s: " + String.join(" ", words));
            }
            Thread.sleep(2);
        }
    }

    /** Bytes per second of writes of {@code size} bytes to the sink, until the sink has them all. */
    private static double stream(Control control, InetSocketAddress sink, int size, boolean selector) throws Exception {
        try (SocketChannel channel = SocketChannel.open(sink); Selector waiting = Selector.open()) {
            int port = ((InetSocketAddress) channel.getLocalAddress()).getPort();
            if (selector) {
                channel.configureBlocking(false);
                channel.register(waiting, SelectionKey.OP_WRITE);
            }
            ByteBuffer buffer = Echo.payload(size, size);
            write(channel, waiting, buffer, WARM_BYTES);
            awaitSink(control, port, WARM_BYTES);
            long start = System.nanoTime();
            write(channel, waiting, buffer, STREAM_BYTES);
            awaitSink(control, port, WARM_BYTES + STREAM_BYTES);
            return STREAM_BYTES / ((System.nanoTime() - start) / 1e9);
        }
    }

    private static void write(SocketChannel channel, Selector waiting, ByteBuffer buffer, long bytes) throws IOException {
        for (long sent = 0; sent < bytes; sent += buffer.capacity()) {
            buffer.clear();
            while (buffer.hasRemaining()) {
                if (channel.write(buffer) == 0 && !channel.isBlocking()) {
                    waiting.select();
                    waiting.selectedKeys().clear();
                }
            }
        }
    }

    private static double nettyStream(Control control, InetSocketAddress sink, int size) throws Exception {
        EventLoopGroup group = new NioEventLoopGroup(1);
        try {
            Channel channel = new Bootstrap().group(group).channel(NioSocketChannel.class).handler(new ChannelInboundHandlerAdapter())
                    .connect(sink).sync().channel();
            int port = ((InetSocketAddress) channel.localAddress()).getPort();
            ByteBuf chunk = Unpooled.directBuffer(size).writeBytes(new byte[size]);
            nettyWrite(channel, chunk, WARM_BYTES);
            awaitSink(control, port, WARM_BYTES);
            long start = System.nanoTime();
            nettyWrite(channel, chunk, STREAM_BYTES);
            awaitSink(control, port, WARM_BYTES + STREAM_BYTES);
            double rate = STREAM_BYTES / ((System.nanoTime() - start) / 1e9);
            channel.close().sync();
            return rate;
        } finally {
            group.shutdownGracefully(0, 1, TimeUnit.SECONDS).await();
        }
    }

    /** Writes {@code bytes} in chunks as netty's channel takes them (on its event loop). */
    private static void nettyWrite(Channel channel, ByteBuf chunk, long bytes) throws Exception {
        CompletableFuture<Void> written = new CompletableFuture<>();
        channel.eventLoop().execute(new Runnable() {
            long sent;

            @Override
            public void run() {
                while (sent < bytes && channel.isWritable()) {
                    channel.write(chunk.retainedDuplicate());
                    sent += chunk.readableBytes();
                }
                channel.flush();
                if (sent < bytes) {
                    channel.eventLoop().schedule(this, 50, TimeUnit.MICROSECONDS);
                } else {
                    written.complete(null);
                }
            }
        });
        written.get(600, TimeUnit.SECONDS);
    }

    // --- the parent: both providers, perftest, the table -------------------------------------------

    /** One provider's figures by name, from its child JVM; the path of its first connection as "path" in {@code paths}. */
    private static Map<String, Double> provider(boolean hadronio, InetSocketAddress base, Map<String, String> paths, PrintStream out)
            throws Exception {
        String label = hadronio ? "hadroNIO" : "JDK";
        out.println("hosts bench: " + label + " against " + base.getAddress().getHostAddress() + ":" + base.getPort() + " ...");
        out.flush();
        Map<String, Double> figures = new LinkedHashMap<>();
        try (HostChild.Process child = HostChild.Process.start(hadronio, Collections.emptyMap(), Collections.emptyMap(), "bench", base)) {
            for (String name : names()) {
                double value = Double.parseDouble(child.await(FIGURE.trim() + " " + name, 900));
                figures.put(name, value);
                out.printf(Locale.ROOT, "hosts bench:   %s %s: %s%n", label, name, name.startsWith("rtt")
                        ? Units.seconds(value / 1e6) : Units.rate(value));
                out.flush();
            }
            paths.put(label, child.await("PATH", 10));
            out.println("hosts bench:   " + label + " path: " + paths.get(label));
        }
        return figures;
    }

    private static List<String> names() {
        List<String> names = new ArrayList<>();
        for (String flavour : FLAVOURS) {
            names.add("rtt." + flavour);
        }
        for (int size : STREAM_SIZES) {
            for (String flavour : FLAVOURS) {
                names.add("stream" + size + "." + flavour);
            }
        }
        return names;
    }

    /** {@code ucx_perftest}'s figures against the server on {@code host}: round trip (us) and bandwidths (bytes/s). */
    private static Map<String, Double> perftest(Path perftest, String host, int port, PrintStream out) throws Exception {
        Map<String, Double> figures = new LinkedHashMap<>();
        Map<String, Double> lat = perftestRun(perftest, host, port, "tag_lat", 64, ROUND_TRIPS, null, out);
        figures.put("rtt", 2 * lat.get("50.0_percentile_lat"));
        for (int size : STREAM_SIZES) {
            int count = (int) Math.max(20, (STREAM_BYTES / 2) / size);
            double tag = perftestRun(perftest, host, port, "tag_bw", size, count, null, out).get("overall_bw");
            double stream = perftestRun(perftest, host, port, "stream_bw", size, count, null, out).get("overall_bw");
            figures.put("tag" + size, tag * 1024 * 1024);
            figures.put("stream" + size, stream * 1024 * 1024);
        }
        // The floor per verbs transport (UCX's aliases: rc_v is rc_verbs with ud_verbs for its
        // wire-up, ud_v is ud_verbs alone).
        if (Kernel.rdmaDevice()) {
            int large = STREAM_SIZES[STREAM_SIZES.length - 1];
            for (String tls : TRANSPORTS) {
                double rtt = 2 * perftestRun(perftest, host, port, "tag_lat", 64, ROUND_TRIPS, tls, out).get("50.0_percentile_lat");
                double bw = perftestRun(perftest, host, port, "tag_bw", large, (int) Math.max(20, (STREAM_BYTES / 2) / large), tls, out)
                        .get("overall_bw");
                figures.put("floor." + tls + ".rtt", rtt);
                figures.put("floor." + tls + ".bw", bw * 1024 * 1024);
            }
        }
        return figures;
    }

    private static Map<String, Double> perftestRun(Path perftest, String host, int port, String test, int size, int count, String tls,
            PrintStream out) throws Exception {
        out.printf(Locale.ROOT, "hosts bench: ucx_perftest %s %s%s ...%n", test, Units.bytes(size), tls == null ? "" : " over " + tls);
        out.flush();
        List<String> command = Arrays.asList(perftest.toString(), host, "-p", Integer.toString(port), "-t", test,
                "-s", Integer.toString(size), "-n", Integer.toString(count), "-w", Integer.toString(Math.max(10, count / 10)), "-f", "-v");
        long deadline = System.nanoTime() + 120_000_000_000L;
        while (true) {
            ProcessBuilder builder = new ProcessBuilder(command).redirectErrorStream(true);
            if (tls != null) {
                builder.environment().put("UCX_TLS", tls + ",self");
            }
            if (Kernel.softwareRdma()) {
                // What hadroNIO sets for itself on such a device (see its UCX context): UD's
                // check of each packet's destination GID drops what Soft-RoCE delivers.
                builder.environment().putIfAbsent("UCX_UD_ETH_DGID_CHECK", "n");
            }
            Process process = builder.start();
            List<String> lines = new ArrayList<>();
            try (BufferedReader reader = new BufferedReader(new InputStreamReader(process.getInputStream(), StandardCharsets.UTF_8))) {
                String line;
                while ((line = reader.readLine()) != null) {
                    lines.add(line);
                }
            }
            if (!process.waitFor(600, TimeUnit.SECONDS)) {
                process.destroyForcibly();
                throw new IOException("ucx_perftest " + test + " did not finish in 600 s");
            }
            String text = String.join("\n", lines);
            if (!text.contains("Connection refused") || System.nanoTime() > deadline) {
                try {
                    return dev.hadronio.examples.compare.Perftest.parse(lines, Path.of("ucx_perftest " + test));
                } catch (IOException e) {
                    throw new IOException("ucx_perftest " + test + " printed no figures: "
                            + String.join(" | ", lines.subList(Math.max(0, lines.size() - 8), lines.size())), e);
                }
            }
            Thread.sleep(200);
        }
    }

    /** Runs both providers and perftest, prints the table, writes CSV and plots into {@code output}. */
    static int run(InetSocketAddress base, int jdkPort, Path perftest, int perftestPort, Path output, PrintStream out) throws Exception {
        String host = base.getAddress().getHostAddress();
        Map<String, String> paths = new LinkedHashMap<>();
        Map<String, Double> jdk = provider(false, new InetSocketAddress(base.getAddress(), jdkPort), paths, out);
        Map<String, Double> hadronio = provider(true, base, paths, out);
        Map<String, Double> native_ = perftest == null ? Collections.emptyMap() : perftest(perftest, host, perftestPort, out);
        TextTable table = new TextTable("figure", "JDK", "hadroNIO", "ucx_perftest", "hadroNIO vs JDK", "hadroNIO / perftest");
        List<String> header = Arrays.asList("figure", "flavour", "jdk", "hadronio", "ucx_perftest", "unit");
        Files.createDirectories(output);
        Path csv = output.resolve("hosts-bench.csv");
        Files.deleteIfExists(csv);
        List<BarPlot.Bar> versusJdk = new ArrayList<>();
        List<BarPlot.Bar> ofPerftest = new ArrayList<>();
        for (String name : names()) {
            String flavour = name.substring(name.indexOf('.') + 1);
            boolean rtt = name.startsWith("rtt");
            int size = rtt ? 64 : Integer.parseInt(name.substring("stream".length(), name.indexOf('.')));
            String figure = (rtt ? "64 B round trip" : Units.bytes(size) + " stream") + ", " + flavour;
            double j = jdk.get(name);
            double h = hadronio.get(name);
            Double p = rtt ? native_.get("rtt") : native_.containsKey("tag" + size)
                    ? Math.max(native_.get("tag" + size), native_.get("stream" + size)) : null;
            double better = rtt ? j / h : h / j;
            String versus = String.format(Locale.ROOT, "%.2fx", better);
            String ofNative = p == null ? "" : String.format(Locale.ROOT, "%.2fx", h / p);
            table.row(figure, rtt ? Units.seconds(j / 1e6) : Units.rate(j), rtt ? Units.seconds(h / 1e6) : Units.rate(h),
                    p == null ? "" : rtt ? Units.seconds(p / 1e6) : Units.rate(p), versus, ofNative);
            CsvFile.append(csv, header, Arrays.asList(rtt ? "rtt64" : "stream" + size, flavour, CsvFile.number(j), CsvFile.number(h),
                    p == null ? "" : CsvFile.number(p), rtt ? "us" : "bytes/s"));
            versusJdk.add(new BarPlot.Bar(figure, better));
            if (p != null) {
                ofPerftest.add(new BarPlot.Bar(figure, rtt ? p / h : h / p));
            }
        }
        out.println();
        out.println("Between two hosts; hadroNIO's path: " + paths.get("hadroNIO") + ". \"hadroNIO vs JDK\" is times better; "
                + "\"hadroNIO / perftest\" is hadroNIO's round trip over perftest's (tag_lat, doubled) and its stream's share of "
                + "perftest's best of tag_bw and stream_bw");
        out.print(table);
        TextTable floor = new TextTable("ucx_perftest by transport", "64 B round trip (tag_lat)", Units.bytes(STREAM_SIZES[STREAM_SIZES.length - 1]) + " (tag_bw)");
        for (String tls : TRANSPORTS) {
            if (native_.containsKey("floor." + tls + ".rtt")) {
                floor.row(tls, Units.seconds(native_.get("floor." + tls + ".rtt") / 1e6), Units.rate(native_.get("floor." + tls + ".bw")));
                CsvFile.append(csv, header, Arrays.asList("floor-rtt64", tls, "", "", CsvFile.number(native_.get("floor." + tls + ".rtt")), "us"));
                CsvFile.append(csv, header, Arrays.asList("floor-bw" + STREAM_SIZES[STREAM_SIZES.length - 1], tls, "", "",
                        CsvFile.number(native_.get("floor." + tls + ".bw")), "bytes/s"));
            }
        }
        if (!floor.isEmpty()) {
            out.println();
            out.print(floor);
        }
        BarPlot.writePng(output.resolve("hosts-bench.png"), "hadroNIO vs the JDK between two hosts (times better)", versusJdk);
        if (!ofPerftest.isEmpty()) {
            BarPlot.writePng(output.resolve("hosts-bench-perftest.png"), "hadroNIO's share of ucx_perftest between two hosts", ofPerftest);
        }
        out.println("hosts bench: " + csv + ", hosts-bench.png" + (ofPerftest.isEmpty() ? "" : ", hosts-bench-perftest.png"));
        return 0;
    }
}
