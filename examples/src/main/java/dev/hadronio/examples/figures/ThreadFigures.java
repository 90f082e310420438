package dev.hadronio.examples.figures;

import static dev.hadronio.examples.figures.Children.PREFIX;
import static dev.hadronio.examples.util.OwnProcess.descriptors;
import static dev.hadronio.examples.figures.Children.figure;
import static dev.hadronio.examples.figures.Children.reader;
import static dev.hadronio.examples.util.OwnProcess.residentBytes;
import static dev.hadronio.examples.figures.Children.settle;

import java.io.BufferedReader;
import java.io.BufferedWriter;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.OutputStreamWriter;
import java.io.PrintStream;
import java.lang.management.ManagementFactory;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.nio.channels.spi.SelectorProvider;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Collections;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * What a thread-per-connection server costs per connection: a server JVM accepts connections in
 * blocking mode and gives each a platform thread that echoes what it reads; a client JVM opens the
 * connections in blocking mode (4 threads) and completes one echo on each. Figures: the server's
 * resident memory and descriptors per connection (its Java heap is fixed and touched up front, so
 * the growth is native memory and thread stacks), the time until every connection had its first
 * echo, the server's CPU while all connections idle for 10 s, and one more echo on every
 * connection. Each provider runs in its own pair of JVMs, one after the other.
 *
 * <p>{@code hadronio bench threads [-c connections]}
 */
public final class ThreadFigures {
    /** Connections opened and closed before the server takes its baseline. */
    private static final int WARM_CONNECTIONS = 32;
    private static final int CLIENT_THREADS = 4;
    private static final int IDLE_SECONDS = 10;
    private static final long STACK_BYTES = 256 * 1024;

    private final int connections;
    private final PrintStream out;

    public ThreadFigures(int connections, PrintStream out) {
        this.connections = connections;
        this.out = out;
    }

    /** Runs server and client for the JDK's provider and for hadroNIO and prints the table. */
    public void run() throws Exception {
        Map<String, Map<String, Double>> results = new LinkedHashMap<>();
        for (boolean hadronio : new boolean[] {false, true}) {
            String label = hadronio ? "hadroNIO" : "JDK";
            out.println("(" + (hadronio ? 2 : 1) + "/2) " + label + ": " + connections
                + " blocking connections, a server thread each");
            results.put(label, measure(hadronio));
        }
        out.println();
        out.println("Thread-per-connection server, " + connections + " blocking connections (lower is better):");
        String format = "%-46s %14s %14s %10s%n";
        out.printf(Locale.ROOT, format, "figure", "JDK", "hadroNIO", "JDK/hadroNIO");
        out.println("-".repeat(88));
        row(format, "server memory per connection", "memoryPerConnection", results, "KiB", 1.0 / 1024);
        row(format, "server descriptors per connection", "descriptorsPerConnection", results, "", 1);
        row(format, "first echo on every connection", "firstEchoMillis", results, "ms", 1);
        row(format, "server CPU, all idle for " + IDLE_SECONDS + " s", "idleCpuPercent", results, "%", 1);
        row(format, "one more echo on every connection", "secondEchoMillis", results, "ms", 1);
        Double workers = results.get("hadroNIO").get("workersCreated");
        if (workers != null) {
            out.printf(Locale.ROOT, "hadroNIO server: %.0f UCX workers created for %d connections%n", workers, connections);
        }
    }

    private void row(String format, String name, String key, Map<String, Map<String, Double>> results, String unit, double scale) {
        Double jdk = results.get("JDK").get(key);
        Double ours = results.get("hadroNIO").get(key);
        out.printf(Locale.ROOT, format, name, value(jdk, unit, scale), value(ours, unit, scale),
            jdk != null && ours != null && ours != 0 ? String.format(Locale.ROOT, "%.2fx", jdk / ours) : "n/a");
    }

    private static String value(Double v, String unit, double scale) {
        return v == null ? "n/a" : String.format(Locale.ROOT, "%.1f %s", v * scale, unit).trim();
    }

    private Map<String, Double> measure(boolean hadronio) throws Exception {
        Process server = child(hadronio, "server", "0");
        Process client = null;
        try {
            BufferedReader serverOut = reader(server);
            String port = null;
            for (String line; (line = serverOut.readLine()) != null; ) {
                if (line.startsWith("PORT ")) {
                    port = line.substring(5);
                    break;
                }
                out.println("  server: " + line);
            }
            if (port == null) {
                throw new IOException("the server JVM did not start");
            }
            client = child(hadronio, "client", port);
            Process clientProcess = client;
            Map<String, Double> figures = Collections.synchronizedMap(new LinkedHashMap<>());
            Thread clientLines = new Thread(() -> relay(reader(clientProcess), "client", figures));
            clientLines.start();
            BufferedWriter clientIn = new BufferedWriter(new OutputStreamWriter(client.getOutputStream(), StandardCharsets.UTF_8));
            for (String line; (line = serverOut.readLine()) != null; ) {
                if (!record(line, "server", figures) && line.equals("IDLE DONE")) {
                    // The server measured its idle CPU: now the client echoes on every connection again.
                    clientIn.write("GO\n");
                    clientIn.flush();
                }
            }
            clientLines.join(TimeUnit.MINUTES.toMillis(5));
            if (!server.waitFor(60, TimeUnit.SECONDS) || server.exitValue() != 0) {
                throw new IOException("the server JVM failed");
            }
            if (!client.waitFor(60, TimeUnit.SECONDS) || client.exitValue() != 0) {
                throw new IOException("the client JVM failed");
            }
            return figures;
        } finally {
            if (client != null) {
                client.destroyForcibly();
            }
            server.destroyForcibly();
        }
    }

    private void relay(BufferedReader lines, String who, Map<String, Double> figures) {
        try {
            for (String line; (line = lines.readLine()) != null; ) {
                record(line, who, figures);
            }
        } catch (IOException e) {
            out.println("  " + who + ": " + e);
        }
    }

    /** Prints a child's line; a figure line is also recorded. Returns whether it was a figure. */
    private boolean record(String line, String who, Map<String, Double> figures) {
        out.println("  " + who + ": " + line);
        if (!line.startsWith(PREFIX)) {
            return false;
        }
        String[] parts = line.substring(PREFIX.length()).split(" ");
        figures.put(parts[0], Double.parseDouble(parts[1]));
        return true;
    }

    private Process child(boolean hadronio, String role, String port) throws IOException {
        // A fixed, touched heap: what the server's resident size gains is native memory and stacks.
        return Children.start(hadronio, Arrays.asList("-Xms384m", "-Xmx384m", "-XX:+AlwaysPreTouch"), ThreadFigures.class,
            role, port, Integer.toString(connections));
    }

    /** Child entry point: {@code server 0 N} or {@code client PORT N}. */
    public static void main(String[] args) throws Exception {
        int count = Integer.parseInt(args[2]);
        if (args[0].equals("server")) {
            new Server(count).run();
        } else {
            client(Integer.parseInt(args[1]), count);
        }
    }

    /** Accepts connections, one echoing thread each; measures itself as the client goes on. */
    private static final class Server {
        private final int count;
        private final AtomicInteger echoed = new AtomicInteger();
        private final AtomicInteger live = new AtomicInteger();
        private final AtomicInteger ended = new AtomicInteger();

        Server(int count) {
            this.count = count;
        }

        void run() throws Exception {
            ServerSocketChannel server = SelectorProvider.provider().openServerSocketChannel();
            server.bind(new InetSocketAddress("127.0.0.1", 0), 4096);
            System.out.println("PORT " + ((InetSocketAddress) server.getLocalAddress()).getPort());
            System.out.flush();
            Thread acceptor = new Thread(() -> accept(server), "acceptor");
            acceptor.setDaemon(true);
            acceptor.start();

            await(() -> echoed.get() >= WARM_CONNECTIONS && ended.get() >= WARM_CONNECTIONS, "the warm-up connections");
            settle();
            long rss = residentBytes();
            int descriptors = descriptors();
            long workers = workersCreated();
            System.out.println("baseline taken; waiting for " + count + " connections");
            System.out.flush();
            await(() -> echoed.get() >= WARM_CONNECTIONS + count, count + " echoing connections");
            settle();
            figure("memoryPerConnection", (residentBytes() - rss) / (double) count);
            figure("descriptorsPerConnection", (descriptors() - descriptors) / (double) count);
            if (workers >= 0) {
                figure("workersCreated", workersCreated() - workers);
            }

            com.sun.management.OperatingSystemMXBean os =
                (com.sun.management.OperatingSystemMXBean) ManagementFactory.getOperatingSystemMXBean();
            long cpu = os.getProcessCpuTime();
            long start = System.nanoTime();
            Thread.sleep(TimeUnit.SECONDS.toMillis(IDLE_SECONDS));
            figure("idleCpuPercent", 100.0 * (os.getProcessCpuTime() - cpu) / (System.nanoTime() - start));
            System.out.println("IDLE DONE");
            System.out.flush();
            await(() -> live.get() == 0, "the client to close its connections");
            server.close();
        }

        private void accept(ServerSocketChannel server) {
            try {
                while (true) {
                    SocketChannel channel = server.accept();
                    live.incrementAndGet();
                    Thread thread = new Thread(null, () -> echo(channel), "connection", STACK_BYTES);
                    thread.setDaemon(true);
                    thread.start();
                }
            } catch (IOException e) {
                // closed at the end
            }
        }

        private void echo(SocketChannel channel) {
            ByteBuffer buffer = ByteBuffer.allocate(64);
            boolean first = true;
            try (SocketChannel c = channel) {
                while (true) {
                    buffer.clear();
                    if (c.read(buffer) < 0) {
                        break;
                    }
                    buffer.flip();
                    while (buffer.hasRemaining()) {
                        c.write(buffer);
                    }
                    if (first) {
                        first = false;
                        echoed.incrementAndGet();
                    }
                }
            } catch (IOException e) {
                System.out.println("connection failed: " + e);
            } finally {
                live.decrementAndGet();
                ended.incrementAndGet();
            }
        }
    }

    /** Opens the warm-up connections, then {@code count} more, echoing once on each. */
    private static void client(int port, int count) throws Exception {
        InetSocketAddress address = new InetSocketAddress("127.0.0.1", port);
        List<SocketChannel> warm = openAll(address, WARM_CONNECTIONS);
        for (SocketChannel channel : warm) {
            channel.close();
        }
        Thread.sleep(2000);
        long start = System.nanoTime();
        List<SocketChannel> channels = openAll(address, count);
        figure("firstEchoMillis", (System.nanoTime() - start) / 1e6);
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        if (!"GO".equals(in.readLine())) {
            throw new IOException("the parent went away");
        }
        start = System.nanoTime();
        parallel(channels.size(), i -> echo(channels.get(i)));
        figure("secondEchoMillis", (System.nanoTime() - start) / 1e6);
        for (SocketChannel channel : channels) {
            channel.close();
        }
    }

    private static List<SocketChannel> openAll(InetSocketAddress address, int count) throws Exception {
        SocketChannel[] channels = new SocketChannel[count];
        AtomicInteger done = new AtomicInteger();
        parallel(count, i -> {
            channels[i] = SocketChannel.open(address);
            echo(channels[i]);
            int n = done.incrementAndGet();
            if (n % 1000 == 0) {
                System.out.println(n + " connections echoed");
                System.out.flush();
            }
        });
        List<SocketChannel> list = new ArrayList<>();
        Collections.addAll(list, channels);
        return list;
    }

    private interface Step {
        void run(int index) throws IOException;
    }

    /** Runs {@code step} for 0..n-1 on {@link #CLIENT_THREADS} threads; the first failure is thrown. */
    private static void parallel(int n, Step step) throws Exception {
        AtomicInteger next = new AtomicInteger();
        IOException[] failure = new IOException[1];
        List<Thread> threads = new ArrayList<>();
        for (int t = 0; t < CLIENT_THREADS; t++) {
            Thread thread = new Thread(() -> {
                try {
                    for (int i; (i = next.getAndIncrement()) < n; ) {
                        step.run(i);
                    }
                } catch (IOException e) {
                    synchronized (failure) {
                        failure[0] = e;
                    }
                    next.set(n);
                }
            });
            thread.start();
            threads.add(thread);
        }
        for (Thread thread : threads) {
            thread.join();
        }
        if (failure[0] != null) {
            throw failure[0];
        }
    }

    private static void echo(SocketChannel channel) throws IOException {
        ByteBuffer one = ByteBuffer.allocate(1);
        channel.write(one);
        one.clear();
        if (channel.read(one) != 1) {
            throw new IOException("no echo from the server");
        }
    }

    private interface Condition {
        boolean holds();
    }

    private static void await(Condition condition, String what) throws Exception {
        long deadline = System.nanoTime() + TimeUnit.MINUTES.toNanos(5);
        while (!condition.holds()) {
            if (System.nanoTime() > deadline) {
                throw new IOException("gave up waiting for " + what);
            }
            Thread.sleep(20);
        }
    }

    /** hadroNIO's {@code WorkersCreated} counter (by reflection), or -1 on the JDK's provider. */
    private static long workersCreated() {
        SelectorProvider provider = SelectorProvider.provider();
        try {
            Object counters = provider.getClass().getMethod("counters").invoke(provider);
            Object value = ((Map<?, ?>) counters).get("WorkersCreated");
            return value instanceof Long ? (Long) value : -1;
        } catch (ReflectiveOperationException e) {
            return -1;
        }
    }
}
