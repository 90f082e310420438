package dev.hadronio.examples.compare;

import dev.hadronio.examples.bench.OperationKind;
import dev.hadronio.examples.bench.OperationMode;
import dev.hadronio.examples.bench.ResultColumns;
import dev.hadronio.examples.bench.ResultRow;
import dev.hadronio.examples.bench.RunDescription;
import dev.hadronio.examples.report.Units;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.InterruptedIOException;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

/**
 * Native UCX reference figures from {@code ucx_perftest} at the sizes of the run description: {@code tag_lat} for
 * MessagingPingPong (its one-way latency doubled to a round trip) and {@code tag_bw} for unidirectional
 * MessagingThroughput (its MB/s are MiB/s). Server and client are separate processes on loopback.
 */
public final class Perftest {

    static final String LABEL = "ucx_perftest";
    private static final long TIMEOUT_SECONDS = 120;
    private static final long CONNECT_SECONDS = 10;
    private static final double MIB = 1024.0 * 1024.0;

    private final Path executable;
    private final Path logs;
    private final PrintStream out;

    /**
     * The ucx_perftest built with hadroNIO's bundled UCX (cargo's build directory of ucx1-sys under
     * the working directory's {@code target/release/build}), the newest if there are several;
     * null if there is none.
     */
    static Path bundled() {
        return bundledUnder(Paths.get("."));
    }

    /** {@link #bundled()} of the source tree at {@code root}. */
    static Path bundledUnder(Path root) {
        java.io.File build = root.resolve("target/release/build").toFile();
        java.io.File[] candidates = build.listFiles((dir, name) -> name.startsWith("ucx1-sys-"));
        if (candidates == null) {
            return null;
        }
        Path best = null;
        long newest = Long.MIN_VALUE;
        for (java.io.File candidate : candidates) {
            java.io.File executable = new java.io.File(candidate, "out/bin/ucx_perftest");
            if (executable.canExecute() && executable.lastModified() > newest) {
                newest = executable.lastModified();
                best = executable.toPath();
            }
        }
        return best;
    }

    Perftest(Path executable, Path logs, PrintStream out) {
        this.executable = executable;
        this.logs = logs;
        this.out = out;
    }

    /** Runs every matching iteration once; the rows look like the bench server's (benchmark "ucx_perftest"). */
    List<ResultRow> run(RunDescription d) throws IOException {
        List<ResultRow> rows = new ArrayList<>();
        for (RunDescription.Operation op : d.operations()) {
            boolean latency = op.kind == OperationKind.MESSAGING_PING_PONG;
            if (!latency && !(op.kind == OperationKind.MESSAGING_THROUGHPUT
                    && op.modes.contains(OperationMode.UNIDIRECTIONAL))) {
                continue;
            }
            for (RunDescription.Iteration it : op.iterations) {
                String test = latency ? "tag_lat" : "tag_bw";
                Map<String, Double> figures = measure(test, it);
                Map<String, Double> values = new LinkedHashMap<>();
                if (latency) {
                    double rtt = 2 * figures.get("overall_lat") / 1e6;
                    values.put(ResultColumns.AVERAGE, rtt);
                    values.put(ResultColumns.P50, 2 * figures.get("50.0_percentile_lat") / 1e6);
                    values.put(ResultColumns.OPERATION_THROUGHPUT, 1 / rtt);
                } else {
                    values.put(ResultColumns.DATA_THROUGHPUT, figures.get("overall_bw") * MIB);
                    values.put(ResultColumns.OPERATION_THROUGHPUT, figures.get("overall_mr"));
                }
                ResultRow row = new ResultRow(op.kind.fileName(OperationMode.UNIDIRECTIONAL), LABEL, 0, it.size,
                        values);
                rows.add(row);
                out.println("  " + LABEL + " " + test + " " + Units.bytes(it.size) + ": " + (latency
                        ? "round trip " + Units.seconds(values.get(ResultColumns.AVERAGE))
                        : Units.rate(values.get(ResultColumns.DATA_THROUGHPUT))));
            }
        }
        return rows;
    }

    /** One {@code ucx_perftest} run of {@code test} at the iteration's size and count: its final figures. */
    Map<String, Double> measure(String test, RunDescription.Iteration it) throws IOException {
        if (!Files.isExecutable(executable)) {
            throw new IOException("ucx_perftest not found or not executable: " + executable);
        }
        Files.createDirectories(logs);
        int port = Ports.freePair();
        Path log = logs.resolve("perftest-" + test + "-" + it.size + ".log");
        Path serverLog = logs.resolve("perftest-server.log");
        Process server = new ProcessBuilder(executable.toString(), "-p", Integer.toString(port))
                .redirectErrorStream(true).redirectOutput(serverLog.toFile()).start();
        List<String> cmd = Arrays.asList(executable.toString(), "127.0.0.1", "-p", Integer.toString(port),
                "-t", test, "-s", Integer.toString(it.size), "-n", Integer.toString(it.count),
                "-w", Integer.toString(Math.max(1, it.warmUp)), "-f", "-v");
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(CONNECT_SECONDS);
        try {
            while (true) {
                // The server's "Waiting for connection" sits in its stdio buffer: retry refused connects instead.
                List<String> lines = runClient(cmd);
                Files.write(log, lines, StandardCharsets.UTF_8);
                if (!String.join("\n", lines).contains("Connection refused")) {
                    return parse(lines, log);
                }
                if (!server.isAlive() || System.nanoTime() > deadline) {
                    throw new IOException("ucx_perftest server on port " + port + " is not reachable; see "
                            + serverLog);
                }
                Thread.sleep(100);
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new InterruptedIOException("interrupted while running ucx_perftest");
        } finally {
            server.destroyForcibly();
        }
    }

    private static List<String> runClient(List<String> cmd) throws IOException, InterruptedException {
        Process client = new ProcessBuilder(cmd).redirectErrorStream(true).start();
        try {
            List<String> lines = new ArrayList<>();
            try (BufferedReader r = new BufferedReader(new InputStreamReader(client.getInputStream(),
                    StandardCharsets.UTF_8))) {
                String line;
                while ((line = r.readLine()) != null) {
                    lines.add(line);
                }
            }
            if (!client.waitFor(TIMEOUT_SECONDS, TimeUnit.SECONDS)) {
                lines.add("(killed after " + TIMEOUT_SECONDS + " s)");
            }
            return lines;
        } finally {
            client.destroyForcibly();
        }
    }

    /**
     * Parses the {@code -f -v} output: a CSV header line naming the columns, then the final figures
     * (the first line after it with as many fields; UCX's log lines may come in between).
     */
    public static Map<String, Double> parse(List<String> lines, Path log) throws IOException {
        for (int i = 0; i + 1 < lines.size(); i++) {
            if (lines.get(i).contains("overall_lat") && lines.get(i).contains("overall_bw")) {
                String[] names = lines.get(i).trim().split(",");
                int next = i + 1;
                while (next + 1 < lines.size() && lines.get(next).trim().split(",").length != names.length) {
                    next++;
                }
                String[] values = lines.get(next).trim().split(",");
                if (names.length != values.length) {
                    break;
                }
                Map<String, Double> figures = new LinkedHashMap<>();
                try {
                    for (int c = 0; c < names.length; c++) {
                        figures.put(names[c].trim(), Double.parseDouble(values[c].trim()));
                    }
                } catch (NumberFormatException e) {
                    break;
                }
                for (String required : new String[] {"overall_lat", "overall_bw", "overall_mr",
                        "50.0_percentile_lat"}) {
                    if (!figures.containsKey(required)) {
                        figures.put(required, Double.NaN);
                    }
                }
                return figures;
            }
        }
        throw new IOException("cannot find ucx_perftest's figures in its output; see " + log);
    }
}
