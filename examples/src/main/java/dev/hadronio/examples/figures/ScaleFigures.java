package dev.hadronio.examples.figures;

import static dev.hadronio.examples.figures.Children.PREFIX;
import static dev.hadronio.examples.figures.Children.figure;
import static dev.hadronio.examples.figures.Children.reader;

import dev.hadronio.examples.compare.HostPhase;
import dev.hadronio.examples.report.BarPlot;
import dev.hadronio.examples.report.TextTable;
import dev.hadronio.examples.util.CpuClock;
import dev.hadronio.examples.util.WarmUp;
import io.netty.bootstrap.Bootstrap;
import io.netty.bootstrap.ServerBootstrap;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.channel.Channel;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.channel.ChannelInitializer;
import io.netty.channel.ChannelOption;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.nio.NioEventLoopGroup;
import io.netty.channel.socket.SocketChannel;
import io.netty.channel.socket.nio.NioServerSocketChannel;
import io.netty.channel.socket.nio.NioSocketChannel;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.OutputStreamWriter;
import java.io.PrintStream;
import java.io.PrintWriter;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.HdrHistogram.Recorder;

/**
 * netty echo at growing connection counts: a server JVM echoes with 2 event loops, a client JVM
 * keeps one 1 KiB message in flight on each of N connections (2 event loops). Figures per count:
 * round trips per second, their p99, CPU per round trip (both JVMs), and how long until every
 * connection had its first echo (connecting included). Both providers, one after the other, at
 * every count.
 *
 * <p>{@code hadronio bench scale [--counts 1,16,256,1000,4000] [--seconds 5] [-o dir]}
 */
public final class ScaleFigures {
    private static final int MESSAGE = 1024;
    private static final int EVENT_LOOPS = 2;
    private static final int WARMUP_SECONDS = 2;
    private static final String HOST_BEFORE = "hostLatencyBeforeMicros";
    private static final String HOST_AFTER = "hostLatencyAfterMicros";

    private final int[] counts;
    private final int seconds;
    private final int warmUpMax;
    private final Path output;
    private final Path perftest;
    private final PrintStream out;

    /** {@code perftest}: the {@code ucx_perftest} of {@link HostPhase} (null: the bundled one, if built). */
    public ScaleFigures(int[] counts, int seconds, int warmUpMax, Path output, Path perftest, PrintStream out) {
        this.counts = counts.clone();
        this.seconds = seconds;
        this.warmUpMax = warmUpMax;
        this.output = output;
        this.perftest = perftest;
        this.out = out;
    }

    /** Runs every count with both providers, prints the table, writes CSV and plot. */
    public void run() throws Exception {
        Map<String, Map<String, Double>> results = new LinkedHashMap<>();
        Path logs = output != null ? output.resolve("logs") : Paths.get(System.getProperty("java.io.tmpdir"), "hadronio-scale-logs");
        HostPhase host = HostPhase.find(perftest, logs, out);
        int step = 0;
        for (int count : counts) {
            for (boolean hadronio : new boolean[] {false, true}) {
                String label = hadronio ? "hadroNIO" : "JDK";
                out.printf(Locale.ROOT, "(%d/%d) %s, %d connection(s)%n", ++step, counts.length * 2, label, count);
                double before = host.measure();
                Map<String, Double> figures;
                try {
                    figures = measure(hadronio, count);
                } catch (IOException e) {
                    // A step that fails is reported and left out of the table ("n/a"), not hidden.
                    out.println("  FAILED: " + e.getMessage());
                    figures = new LinkedHashMap<>();
                }
                double after = host.measure();
                host.say(before, after);
                figures.put(HOST_BEFORE, before);
                figures.put(HOST_AFTER, after);
                results.put(label + " " + count, figures);
            }
        }
        TextTable table = new TextTable("connections", "figure", "JDK", "hadroNIO", "times better");
        List<BarPlot.Bar> bars = new ArrayList<>();
        StringBuilder csv = new StringBuilder("connections,figure,jdk,hadronio,timesBetter\n");
        boolean hostMeasured = false;
        for (int count : counts) {
            Map<String, Double> jdk = results.get("JDK " + count);
            Map<String, Double> ours = results.get("hadroNIO " + count);
            String[][] figures = {
                {"roundTripsPerSecond", "round trips/s", "", "higher"},
                {"p99Micros", "p99 round trip", "us", "lower"},
                {"cpuMicrosPerRoundTrip", "CPU per round trip", "us", "lower"},
                {"firstEchoMillis", "first echo on all", "ms", "lower"},
            };
            for (String[] f : figures) {
                double a = jdk.getOrDefault(f[0], Double.NaN);
                double b = ours.getOrDefault(f[0], Double.NaN);
                double better = f[3].equals("higher") ? b / a : a / b;
                table.row(Integer.toString(count), f[1], format(a, f[2]), format(b, f[2]), String.format(Locale.ROOT, "%.2fx", better));
                csv.append(String.format(Locale.ROOT, "%d,%s,%.3f,%.3f,%.3f%n", count, f[0], a, b, better));
                if (Double.isFinite(better) && better > 0) {
                    bars.add(new BarPlot.Bar(count + " connections: " + f[1], better));
                }
            }
            String jdkHost = HostPhase.format(jdk.get(HOST_BEFORE), jdk.get(HOST_AFTER));
            String ourHost = HostPhase.format(ours.get(HOST_BEFORE), ours.get(HOST_AFTER));
            if (!jdkHost.equals("-") || !ourHost.equals("-")) {
                hostMeasured = true;
                table.row(Integer.toString(count), HostPhase.ROW, jdkHost, ourHost, "");
                for (String key : new String[] {HOST_BEFORE, HOST_AFTER}) {
                    csv.append(String.format(Locale.ROOT, "%d,%s,%.3f,%.3f,%n", count, key, jdk.get(key), ours.get(key)));
                }
            }
        }
        out.println();
        out.println("netty echo, one 1 KiB message in flight per connection, " + EVENT_LOOPS
            + " event loops per side (hadroNIO vs JDK: times better)");
        out.print(table);
        if (hostMeasured) {
            out.println(HostPhase.LEGEND);
        }
        if (output != null) {
            Files.createDirectories(output);
            Files.write(output.resolve("scale.csv"), csv.toString().getBytes(StandardCharsets.UTF_8));
            BarPlot.writePng(output.resolve("scale.png"), "netty echo at growing connection counts: hadroNIO vs the JDK (times better)", bars);
            out.println("Wrote " + output.resolve("scale.csv") + " and " + output.resolve("scale.png"));
        }
    }

    private static String format(double v, String unit) {
        if (!Double.isFinite(v)) {
            return "n/a";
        }
        return (v >= 100 ? String.format(Locale.ROOT, "%,.0f", v) : String.format(Locale.ROOT, "%.1f", v)) + (unit.isEmpty() ? "" : " " + unit);
    }

    private Map<String, Double> measure(boolean hadronio, int count) throws Exception {
        Process server = child(hadronio, "server", "0", count, "0");
        Process client = null;
        try {
            BufferedReader serverOut = reader(server);
            PrintWriter serverIn = new PrintWriter(new OutputStreamWriter(server.getOutputStream(), StandardCharsets.UTF_8), true);
            String port = expect(serverOut, "PORT ");
            client = child(hadronio, "client", port, count, Long.toString(server.pid()));
            BufferedReader clientOut = reader(client);
            Map<String, Double> figures = new LinkedHashMap<>();
            String failure = null;
            long serverCpu = 0;
            for (String line; (line = clientOut.readLine()) != null; ) {
                if (line.equals("MEASURING")) {
                    serverIn.println("CPU");
                    serverCpu = Long.parseLong(expect(serverOut, "CPU "));
                } else if (line.equals("MEASURED")) {
                    serverIn.println("CPU");
                    serverCpu = Long.parseLong(expect(serverOut, "CPU ")) - serverCpu;
                } else if (line.startsWith(PREFIX)) {
                    String[] parts = line.substring(PREFIX.length()).split(" ");
                    figures.put(parts[0], Double.parseDouble(parts[1]));
                } else {
                    if (line.startsWith("FAILED ")) {
                        failure = line.substring(7);
                    }
                    out.println("  " + line);
                }
            }
            if (!client.waitFor(60, TimeUnit.SECONDS) || client.exitValue() != 0) {
                throw new IOException("the client JVM failed" + (failure == null ? "" : ": " + failure));
            }
            double roundTrips = figures.getOrDefault("roundTrips", Double.NaN);
            double cpu = figures.getOrDefault("clientCpuNanos", Double.NaN) + serverCpu;
            figures.put("cpuMicrosPerRoundTrip", cpu / 1e3 / roundTrips);
            out.printf(Locale.ROOT, "  %,.0f round trips/s, p99 %.1f us, %.1f us CPU each, first echo on all after %.1f ms%n",
                figures.get("roundTripsPerSecond"), figures.get("p99Micros"), figures.get("cpuMicrosPerRoundTrip"),
                figures.get("firstEchoMillis"));
            return figures;
        } finally {
            if (client != null) {
                client.destroyForcibly();
            }
            server.destroyForcibly();
        }
    }

    /** Reads lines until one starts with {@code prefix}; returns the rest of it. */
    private static String expect(BufferedReader lines, String prefix) throws IOException {
        for (String line; (line = lines.readLine()) != null; ) {
            if (line.startsWith(prefix)) {
                return line.substring(prefix.length());
            }
        }
        throw new IOException("a child JVM ended before it said " + prefix.trim());
    }

    private Process child(boolean hadronio, String role, String port, int count, String serverPid) throws IOException {
        return Children.start(hadronio, Arrays.asList("-Xmx1g"), ScaleFigures.class, role, port, Integer.toString(count),
            Integer.toString(seconds), Integer.toString(warmUpMax), serverPid);
    }

    /**
     * Child entry point: {@code server 0 N S W 0} or {@code client PORT N S W SERVER_PID} (W: most
     * warm-up seconds).
     */
    public static void main(String[] args) throws Exception {
        if (args[0].equals("server")) {
            server();
        } else {
            client(Integer.parseInt(args[1]), Integer.parseInt(args[2]), Integer.parseInt(args[3]), Integer.parseInt(args[4]),
                Long.parseLong(args[5]));
        }
    }

    /** Echoes on every connection; answers "CPU" on standard input with its CPU time; ends with it. */
    private static void server() throws Exception {
        EventLoopGroup boss = new NioEventLoopGroup(1);
        EventLoopGroup workers = new NioEventLoopGroup(EVENT_LOOPS);
        try {
            Channel listener = new ServerBootstrap().group(boss, workers).channel(NioServerSocketChannel.class)
                .option(ChannelOption.SO_BACKLOG, 8192)
                .childOption(ChannelOption.TCP_NODELAY, true)
                .childHandler(new ChannelInitializer<SocketChannel>() {
                    @Override
                    protected void initChannel(SocketChannel ch) {
                        ch.pipeline().addLast(new ChannelInboundHandlerAdapter() {
                            @Override
                            public void channelRead(ChannelHandlerContext ctx, Object msg) {
                                ctx.write(msg);
                            }

                            @Override
                            public void channelReadComplete(ChannelHandlerContext ctx) {
                                ctx.flush();
                            }
                        });
                    }
                })
                .bind(new InetSocketAddress("127.0.0.1", 0)).sync().channel();
            System.out.println("PORT " + ((InetSocketAddress) listener.localAddress()).getPort());
            System.out.flush();
            BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
            for (String line; (line = in.readLine()) != null; ) {
                if (line.equals("CPU")) {
                    System.out.println("CPU " + CpuClock.processNanos());
                    System.out.flush();
                }
            }
        } finally {
            workers.shutdownGracefully(0, 1, TimeUnit.SECONDS);
            boss.shutdownGracefully(0, 1, TimeUnit.SECONDS);
        }
    }

    /** One message in flight on each connection: the echo sends the next one. */
    private static final class Pinger extends ChannelInboundHandlerAdapter {
        final Recorder latencies;
        final AtomicLong roundTrips;
        final CountDownLatch firstEchoes;
        private final ByteBuf message;
        private int received;
        private long sentAt;
        private volatile boolean echoed;
        private volatile Channel channel;

        Pinger(Recorder latencies, AtomicLong roundTrips, CountDownLatch firstEchoes, ByteBuf message) {
            this.latencies = latencies;
            this.roundTrips = roundTrips;
            this.firstEchoes = firstEchoes;
            this.message = message;
        }

        @Override
        public void channelActive(ChannelHandlerContext ctx) {
            channel = ctx.channel();
            send(ctx);
        }

        private void send(ChannelHandlerContext ctx) {
            sentAt = System.nanoTime();
            ctx.writeAndFlush(message.retainedDuplicate());
        }

        @Override
        public void channelRead(ChannelHandlerContext ctx, Object msg) {
            ByteBuf buf = (ByteBuf) msg;
            received += buf.readableBytes();
            buf.release();
            if (received < MESSAGE) {
                return;
            }
            received -= MESSAGE;
            latencies.recordValue((System.nanoTime() - sentAt) / 1000);
            roundTrips.incrementAndGet();
            if (!echoed) {
                echoed = true;
                firstEchoes.countDown();
            }
            send(ctx);
        }

        @Override
        public void exceptionCaught(ChannelHandlerContext ctx, Throwable cause) {
            System.out.println("connection failed: " + cause);
            ctx.close();
        }
    }

    private static void client(int port, int count, int seconds, int warmUpMax, long serverPid) throws Exception {
        EventLoopGroup group = new NioEventLoopGroup(EVENT_LOOPS);
        Recorder latencies = new Recorder(3);
        AtomicLong roundTrips = new AtomicLong();
        CountDownLatch firstEchoes = new CountDownLatch(count);
        ByteBuf message = Unpooled.unreleasableBuffer(Unpooled.directBuffer(MESSAGE).writeZero(MESSAGE));
        List<Pinger> pingers = new ArrayList<>();
        try {
            Bootstrap bootstrap = new Bootstrap().group(group).channel(NioSocketChannel.class)
                .option(ChannelOption.TCP_NODELAY, true)
                .handler(new ChannelInitializer<SocketChannel>() {
                    @Override
                    protected void initChannel(SocketChannel ch) {
                        Pinger pinger = new Pinger(latencies, roundTrips, firstEchoes, message);
                        synchronized (pingers) {
                            pingers.add(pinger);
                        }
                        ch.pipeline().addLast(pinger);
                    }
                });
            InetSocketAddress address = new InetSocketAddress("127.0.0.1", port);
            long start = System.nanoTime();
            List<Channel> channels = new ArrayList<>();
            for (int i = 0; i < count; i++) {
                channels.add(bootstrap.connect(address).sync().channel());
            }
            if (!firstEchoes.await(120, TimeUnit.SECONDS)) {
                StringBuilder which = new StringBuilder();
                synchronized (pingers) {
                    for (Pinger pinger : pingers) {
                        if (!pinger.echoed && which.length() < 400) {
                            Channel c = pinger.channel;
                            which.append(' ').append(c == null ? "(not active)" : c.localAddress() + (c.isActive() ? "" : " closed"));
                        }
                    }
                }
                System.out.println("FAILED " + firstEchoes.getCount() + " of " + count
                    + " connections had no echo after 120 s:" + which);
                System.out.flush();
                System.exit(1);
            }
            figure("firstEchoMillis", (System.nanoTime() - start) / 1e6);
            new WarmUp(WARMUP_SECONDS, warmUpMax, serverPid).await(text -> {
                System.out.println(text);
                System.out.flush();
            });
            System.out.println("MEASURING");
            System.out.flush();
            latencies.reset();
            long trips = roundTrips.get();
            long cpu = CpuClock.processNanos();
            start = System.nanoTime();
            Thread.sleep(TimeUnit.SECONDS.toMillis(seconds));
            long elapsed = System.nanoTime() - start;
            trips = roundTrips.get() - trips;
            cpu = CpuClock.processNanos() - cpu;
            System.out.println("MEASURED");
            System.out.flush();
            figure("roundTrips", trips);
            figure("roundTripsPerSecond", trips * 1e9 / elapsed);
            figure("p99Micros", latencies.getIntervalHistogram().getValueAtPercentile(99));
            figure("clientCpuNanos", cpu);
            for (Channel channel : channels) {
                channel.close();
            }
        } finally {
            group.shutdownGracefully(0, 1, TimeUnit.SECONDS).sync();
        }
    }
}
