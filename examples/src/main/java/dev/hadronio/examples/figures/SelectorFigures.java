package dev.hadronio.examples.figures;

import static dev.hadronio.examples.figures.Children.PREFIX;
import static dev.hadronio.examples.util.OwnProcess.descriptors;
import static dev.hadronio.examples.figures.Children.figure;
import static dev.hadronio.examples.util.OwnProcess.residentBytes;
import static dev.hadronio.examples.figures.Children.settle;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.lang.management.ManagementFactory;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.SelectionKey;
import java.nio.channels.Selector;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.nio.channels.spi.SelectorProvider;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.TimeUnit;

/**
 * What many connections on one selector cost: the CPU a fresh JVM uses in the 5 s after it opened
 * its first 100 connections (its start's work in the background), native memory per idle
 * connection, the time of {@code selectNow()} with 1000 registered connections, and the CPU a JVM
 * uses while it holds 100 idle connections in {@code select()} for 10 s. Each provider runs in its
 * own pair of JVMs (a holder and a peer), so the JDK's figures come from the same run.
 *
 * <p>{@code hadronio bench selector [-c connections]}
 */
public final class SelectorFigures {
    private static final int IDLE_CONNECTIONS = 100;
    private static final int IDLE_SECONDS = 10;
    private static final int SELECT_NOW_CALLS = 200_000;
    private static final int START_SECONDS = 5;

    private final int connections;
    private final PrintStream out;

    public SelectorFigures(int connections, PrintStream out) {
        this.connections = Math.max(connections, IDLE_CONNECTIONS);
        this.out = out;
    }

    /** Runs holder and peer for the JDK's provider and for hadroNIO and prints the table. */
    public void run() throws Exception {
        Map<String, Map<String, Double>> results = new LinkedHashMap<>();
        for (boolean hadronio : new boolean[] {false, true}) {
            String label = hadronio ? "hadroNIO" : "JDK";
            out.println("(" + (hadronio ? 2 : 1) + "/2) " + label + ": " + connections + " connections, then "
                + IDLE_CONNECTIONS + " idle for " + IDLE_SECONDS + " s");
            results.put(label, measure(hadronio));
        }
        out.println();
        out.println("Selector figures (" + connections + " connections on one selector; lower is better):");
        String format = "%-44s %14s %14s %10s%n";
        out.printf(Locale.ROOT, format, "figure", "JDK", "hadroNIO", "ratio");
        out.println("-".repeat(85));
        row(format, "CPU, " + START_SECONDS + " s after a fresh JVM's first " + IDLE_CONNECTIONS, "startCpuMillis", results, "ms", 1);
        row(format, "native memory per idle connection", "memoryPerConnection", results, "KiB", 1.0 / 1024);
        row(format, "selectNow() with " + connections + " registered", "selectNowNanos", results, "ns", 1);
        row(format, "CPU, " + IDLE_CONNECTIONS + " idle connections, " + IDLE_SECONDS + " s", "idleCpuPercent", results, "%", 1);
    }

    private void row(String format, String name, String key, Map<String, Map<String, Double>> results, String unit, double scale) {
        Double jdk = results.get("JDK").get(key);
        Double ours = results.get("hadroNIO").get(key);
        out.printf(Locale.ROOT, format, name, value(jdk, unit, scale), value(ours, unit, scale),
            jdk != null && ours != null && ours != 0 ? String.format(Locale.ROOT, "%.2fx", jdk / ours) : "n/a");
    }

    private static String value(Double v, String unit, double scale) {
        return v == null ? "n/a" : String.format(Locale.ROOT, "%.1f %s", v * scale, unit);
    }

    private static Process child(boolean hadronio, String role, String port) throws IOException {
        return Children.start(hadronio, Arrays.asList("-Xmx512m"), SelectorFigures.class, role, port);
    }

    private Map<String, Double> measure(boolean hadronio) throws Exception {
        Process peer = child(hadronio, "peer", "0");
        Process holder = null;
        try {
            BufferedReader peerOut = new BufferedReader(new InputStreamReader(peer.getInputStream(), StandardCharsets.UTF_8));
            String port = null;
            for (String line; (line = peerOut.readLine()) != null; ) {
                if (line.startsWith("PORT ")) {
                    port = line.substring(5);
                    break;
                }
            }
            if (port == null) {
                throw new IOException("the peer JVM did not start");
            }
            holder = child(hadronio, "holder", port);
            Map<String, Double> figures = new LinkedHashMap<>();
            BufferedReader holderOut = new BufferedReader(new InputStreamReader(holder.getInputStream(), StandardCharsets.UTF_8));
            for (String line; (line = holderOut.readLine()) != null; ) {
                if (line.startsWith(PREFIX)) {
                    String[] parts = line.substring(PREFIX.length()).split(" ");
                    figures.put(parts[0], Double.parseDouble(parts[1]));
                    out.println("  " + parts[0] + " = " + parts[1]);
                } else {
                    out.println("  " + line);
                }
            }
            if (!holder.waitFor(120, TimeUnit.SECONDS) || holder.exitValue() != 0) {
                throw new IOException("the holder JVM failed");
            }
            return figures;
        } finally {
            if (holder != null) {
                holder.destroyForcibly();
            }
            peer.destroyForcibly();
        }
    }

    /** Child entry point: {@code peer 0} or {@code holder PORT [connections]}. */
    public static void main(String[] args) throws Exception {
        if (args[0].equals("peer")) {
            peer();
        } else {
            holder(Integer.parseInt(args[1]), args.length > 2 ? Integer.parseInt(args[2]) : 1000);
        }
    }

    /** Accepts connections and echoes whatever arrives, until standard input closes. */
    private static void peer() throws IOException {
        ServerSocketChannel server = SelectorProvider.provider().openServerSocketChannel();
        server.bind(new InetSocketAddress("127.0.0.1", 0), 2048);
        server.configureBlocking(false);
        Selector selector = SelectorProvider.provider().openSelector();
        server.register(selector, SelectionKey.OP_ACCEPT);
        System.out.println("PORT " + ((InetSocketAddress) server.getLocalAddress()).getPort());
        System.out.flush();
        Thread watchdog = new Thread(() -> {
            try {
                while (System.in.read() >= 0) {
                    // wait for the parent to go away
                }
            } catch (IOException ignored) {
                // parent gone
            }
            Runtime.getRuntime().halt(0);
        });
        watchdog.setDaemon(true);
        watchdog.start();
        ByteBuffer buffer = ByteBuffer.allocateDirect(64);
        while (true) {
            selector.select();
            Iterator<SelectionKey> keys = selector.selectedKeys().iterator();
            while (keys.hasNext()) {
                SelectionKey key = keys.next();
                keys.remove();
                if (key.isAcceptable()) {
                    SocketChannel channel;
                    while ((channel = server.accept()) != null) {
                        channel.configureBlocking(false);
                        channel.register(selector, SelectionKey.OP_READ);
                    }
                } else if (key.isReadable()) {
                    SocketChannel channel = (SocketChannel) key.channel();
                    buffer.clear();
                    int n;
                    try {
                        n = channel.read(buffer);
                    } catch (IOException e) {
                        n = -1;
                    }
                    if (n < 0) {
                        key.cancel();
                        channel.close();
                    } else if (n > 0) {
                        buffer.flip();
                        channel.write(buffer);
                    }
                }
            }
        }
    }

    private static void holder(int port, int count) throws Exception {
        InetSocketAddress address = new InetSocketAddress("127.0.0.1", port);
        com.sun.management.OperatingSystemMXBean os =
            (com.sun.management.OperatingSystemMXBean) ManagementFactory.getOperatingSystemMXBean();
        // The JVM's first connections, then what it spends while they idle: its start's work.
        Selector selector = Selector.open();
        List<SocketChannel> first = open(address, IDLE_CONNECTIONS, selector);
        figure("startCpuMillis", idleCpuNanos(os, selector, START_SECONDS) / 1e6);
        for (SocketChannel channel : first) {
            channel.close();
        }
        selector.selectNow();
        settle();
        long before = residentBytes();
        List<SocketChannel> channels = open(address, count, selector);
        settle();
        long after = residentBytes();
        figure("memoryPerConnection", (after - before) / (double) count);
        figure("openFileDescriptors", descriptors());

        for (int i = 0; i < 20_000; i++) {
            selector.selectNow();
        }
        long start = System.nanoTime();
        for (int i = 0; i < SELECT_NOW_CALLS; i++) {
            selector.selectNow();
        }
        figure("selectNowNanos", (System.nanoTime() - start) / (double) SELECT_NOW_CALLS);

        while (channels.size() > IDLE_CONNECTIONS) {
            channels.remove(channels.size() - 1).close();
        }
        selector.selectNow();
        settle();
        figure("idleCpuPercent", 100.0 * idleCpuNanos(os, selector, IDLE_SECONDS) / TimeUnit.SECONDS.toNanos(IDLE_SECONDS));
        for (SocketChannel channel : channels) {
            channel.close();
        }
        selector.close();
    }

    /**
     * The process's CPU time while it waits in {@code select()} for {@code seconds}, reading what
     * a key selected as readable holds, as an application does (a readiness is a hint: a read may
     * find nothing, and a key not read stays ready).
     */
    private static long idleCpuNanos(com.sun.management.OperatingSystemMXBean os, Selector selector, int seconds) throws IOException {
        ByteBuffer buffer = ByteBuffer.allocateDirect(64);
        long cpuStart = os.getProcessCpuTime();
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(seconds);
        while (System.nanoTime() < deadline) {
            selector.select(Math.max(1, TimeUnit.NANOSECONDS.toMillis(deadline - System.nanoTime())));
            for (SelectionKey key : selector.selectedKeys()) {
                buffer.clear();
                if (((SocketChannel) key.channel()).read(buffer) < 0) {
                    key.cancel();
                }
            }
            selector.selectedKeys().clear();
        }
        return os.getProcessCpuTime() - cpuStart;
    }

    /** Opens {@code count} connections, registers them, and completes one echo on each. */
    private static List<SocketChannel> open(InetSocketAddress address, int count, Selector selector) throws IOException {
        List<SocketChannel> channels = new ArrayList<>();
        ByteBuffer one = ByteBuffer.allocateDirect(1);
        for (int i = 0; i < count; i++) {
            SocketChannel channel = SocketChannel.open(address);
            channel.configureBlocking(false);
            channel.register(selector, SelectionKey.OP_READ);
            one.clear();
            channel.write(one);
            channels.add(channel);
        }
        int echoed = 0;
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
        while (echoed < count && System.nanoTime() < deadline) {
            selector.select(1000);
            for (SelectionKey key : selector.selectedKeys()) {
                one.clear();
                if (((SocketChannel) key.channel()).read(one) > 0) {
                    echoed++;
                }
            }
            selector.selectedKeys().clear();
        }
        if (echoed < count) {
            throw new IOException("only " + echoed + " of " + count + " connections echoed");
        }
        return channels;
    }
}
