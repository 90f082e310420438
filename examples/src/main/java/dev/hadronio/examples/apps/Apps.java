package dev.hadronio.examples.apps;

import dev.hadronio.examples.report.LatencyStats;
import dev.hadronio.examples.util.WarmUp;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.Semaphore;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.Consumer;
import org.HdrHistogram.Histogram;

/**
 * The apps of {@code hadronio bench apps} and the two programs each run in its own JVM: the server
 * ({@link #serve}) and the client that measures ({@link #measure}). The client prints
 * {@code PHASE <name> start|end} around each measured phase (the parent samples both JVMs' CPU
 * time there), {@code PROGRESS <text>} about once a second and {@code RESULT <key> <value>} lines.
 */
@SuppressWarnings("try") // close() of these resources may throw InterruptedException: callers let it through
final class Apps {
    private Apps() {
    }

    /** Every app, in table order. */
    static Map<String, App> all() {
        Map<String, App> apps = new LinkedHashMap<>();
        for (App app : new App[] {new JettyApp(false), new JettyApp(true), new ZooKeeperApp(), new WorkerPoolApp(),
                new NettyHttpApp(), new MinaApp(), new StreamApp(), new VirtualThreadApp()}) {
            apps.put(app.name(), app);
        }
        return apps;
    }

    static App named(String name) {
        App app = all().get(name);
        if (app == null) {
            throw new IllegalArgumentException("unknown app '" + name + "' (known: " + String.join(", ", all().keySet()) + ")");
        }
        return app;
    }

    /** The server JVM: serves until its standard input ends. */
    static void serve(App app, InetSocketAddress address, PrintStream out) throws Exception {
        try (App.Server server = app.serve(address)) {
            out.println("READY " + server.port());
            out.flush();
            BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
            while (in.readLine() != null) {
                // nothing is sent; the end of input ends the server
            }
        }
    }

    /** How long each phase warms up: at least, at most, and the server JVM whose compilers count too. */
    static final class Warm {
        final double min;
        final double max;
        final long serverPid;

        Warm(double min, double max, long serverPid) {
            this.min = min;
            this.max = max;
            this.serverPid = serverPid;
        }

        /** A warm-up of both JVMs (see {@link WarmUp}), starting now. */
        WarmUp start() {
            return serverPid > 0 ? new WarmUp(min, max, serverPid) : new WarmUp(min, max);
        }
    }

    /** The client JVM: runs the phases against the server at {@code address}. */
    static void measure(App app, InetSocketAddress address, double seconds, Warm warmUp, PrintStream out) throws Exception {
        if (!app.requests()) {
            for (int connections : new int[] {1, 16}) {
                stream(address, connections, seconds, warmUp, out);
            }
            out.println("DONE");
            return;
        }
        try (App.Client client = app.connect(address)) {
            latency(client, seconds, warmUp, out);
            throughput(app, client, seconds, warmUp, out);
        } finally {
            app.release();
        }
        out.println("DONE");
    }

    /** One request at a time: percentiles of the round trip. */
    private static void latency(App.Client client, double seconds, Warm warmUp, PrintStream out) throws Exception {
        WarmUp warm = warmUp.start();
        Consumer<String> say = progress(out);
        while (!warm.over(say)) {
            client.call();
        }
        Histogram histogram = LatencyStats.newHistogram();
        out.println("PHASE latency start");
        long start = System.nanoTime();
        long end = start + nanos(seconds);
        long nextReport = start + 1_000_000_000L;
        long now = start;
        while (now < end) {
            long before = System.nanoTime();
            client.call();
            now = System.nanoTime();
            histogram.recordValue(now - before);
            if (now >= nextReport) {
                nextReport += 1_000_000_000L;
                out.println(String.format(Locale.ROOT, "PROGRESS one at a time: %d requests, p50 %.1f us",
                        histogram.getTotalCount(), histogram.getValueAtPercentile(50) / 1e3));
            }
        }
        out.println("PHASE latency end");
        result(out, "latency_p50_us", histogram.getValueAtPercentile(50) / 1e3);
        result(out, "latency_p99_us", histogram.getValueAtPercentile(99) / 1e3);
        result(out, "latency_requests", histogram.getTotalCount());
    }

    /** {@link App#inFlight()} requests at once: completed requests per second. */
    private static void throughput(App app, App.Client client, double seconds, Warm warmUp, PrintStream out)
            throws Exception {
        AtomicLong completed = new AtomicLong();
        AtomicReference<Throwable> failure = new AtomicReference<>();
        List<Runnable> stoppers = new ArrayList<>();
        Semaphore window = new Semaphore(app.inFlight());
        boolean async = client.callAsync(e -> {
            if (e != null) {
                failure.compareAndSet(null, e);
            }
            window.release();
        });
        if (async) {
            window.acquire();
            Thread feeder = new Thread(() -> {
                try {
                    while (failure.get() == null && !Thread.currentThread().isInterrupted()) {
                        window.acquire();
                        client.callAsync(e -> {
                            if (e != null) {
                                failure.compareAndSet(null, e);
                            } else {
                                completed.incrementAndGet();
                            }
                            window.release();
                        });
                    }
                } catch (InterruptedException e) {
                    // stopped
                } catch (Exception e) {
                    failure.compareAndSet(null, e);
                }
            }, "apps-feeder");
            feeder.setDaemon(true);
            feeder.start();
            stoppers.add(feeder::interrupt);
        } else {
            List<App.Client> clients = new ArrayList<>();
            for (int i = 0; i < app.inFlight(); i++) {
                App.Client another = i == 0 ? client : client.another();
                clients.add(another);
                Runnable loop = () -> {
                    try {
                        while (failure.get() == null && !Thread.currentThread().isInterrupted()) {
                            another.call();
                            completed.incrementAndGet();
                        }
                    } catch (Exception e) {
                        if (!Thread.currentThread().isInterrupted()) {
                            failure.compareAndSet(null, e);
                        }
                    }
                };
                Thread thread = app.virtualThreads() ? VirtualThreadApp.startVirtual(loop) : new Thread(loop, "apps-client");
                if (!app.virtualThreads()) {
                    thread.setDaemon(true);
                    thread.start();
                }
                stoppers.add(thread::interrupt);
            }
            stoppers.add(() -> {
                for (App.Client c : clients.subList(1, clients.size())) {
                    try {
                        c.close();
                    } catch (Exception e) {
                        // closing at the end
                    }
                }
            });
        }
        warmUp.start().await(progress(out));
        out.println("PHASE throughput start");
        long before = completed.get();
        long start = System.nanoTime();
        for (double left = seconds; left > 0 && failure.get() == null; left -= 1) {
            Thread.sleep((long) (Math.min(1, left) * 1000));
            out.println(String.format(Locale.ROOT, "PROGRESS %d in flight: %d requests", app.inFlight(),
                    completed.get() - before));
        }
        long count = completed.get() - before;
        double elapsed = (System.nanoTime() - start) / 1e9;
        out.println("PHASE throughput end");
        for (Runnable stopper : stoppers) {
            stopper.run();
        }
        if (failure.get() != null) {
            throw new IllegalStateException("a request failed: " + failure.get(), failure.get());
        }
        result(out, "throughput_rps", count / elapsed);
        result(out, "throughput_requests", count);
    }

    /** A full-duplex stream through the echo server on {@code connections} connections. */
    private static void stream(InetSocketAddress address, int connections, double seconds, Warm warmUp, PrintStream out)
            throws Exception {
        AtomicLong received = new AtomicLong();
        List<AutoCloseable> open = StreamApp.start(address, connections, received);
        try {
            warmUp.start().await(progress(out));
            String phase = "stream_" + connections;
            out.println("PHASE " + phase + " start");
            long before = received.get();
            long start = System.nanoTime();
            for (double left = seconds; left > 0; left -= 1) {
                Thread.sleep((long) (Math.min(1, left) * 1000));
                out.println(String.format(Locale.ROOT, "PROGRESS %d connection(s): %.0f MB back",
                        connections, (received.get() - before) / 1e6));
            }
            long bytes = received.get() - before;
            double elapsed = (System.nanoTime() - start) / 1e9;
            out.println("PHASE " + phase + " end");
            result(out, phase + "_MBps", bytes / 1e6 / elapsed);
        } finally {
            for (AutoCloseable channel : open) {
                channel.close();
            }
        }
    }

    /** Where a warm-up tells how it goes: PROGRESS lines. */
    private static Consumer<String> progress(PrintStream out) {
        return text -> out.println("PROGRESS " + text);
    }

    private static long nanos(double seconds) {
        return (long) (seconds * 1e9);
    }

    private static void result(PrintStream out, String key, double value) {
        out.println(String.format(Locale.ROOT, "RESULT %s %.6f", key, value));
        out.flush();
    }
}
