package dev.hadronio.examples.bench;

import dev.hadronio.examples.cli.Options;
import dev.hadronio.examples.transport.Flavour;
import dev.hadronio.examples.transport.TransportFactory;

import java.io.IOException;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.List;
import java.util.zip.CRC32;

/**
 * {@code hadronio bench}: one side of the benchmark harness. Start the server with {@code -s} and the client with
 * {@code -r host:port}, both with the same run description; the server appends the results to CSV files in the
 * result directory, prints a table and draws a plot of everything in that directory.
 */
public final class BenchCommand {

    public static final Path DEFAULT_OUTPUT = Paths.get("result");
    public static final String PLOT_FILE = "plot.png";
    public static final String FLAVOUR_PARAMETER = "flavour";
    public static final String THRESHOLD_PARAMETER = "threshold";
    public static final String THREADS_PARAMETER = "threads";

    private final Options options;
    private final PrintStream out;

    public BenchCommand(Options options, PrintStream out) {
        this.options = options;
        this.out = out;
    }

    public void run() throws IOException {
        RunDescription d = RunDescriptionParser.parse(options.file());
        Flavour flavour;
        try {
            flavour = options.flavour() != null ? options.flavour()
                    : Flavour.parse(d.parameter(FLAVOUR_PARAMETER, Flavour.BLOCKING.label()));
        } catch (IllegalArgumentException e) {
            throw new IOException("bad run description " + options.file() + ": parameter '" + FLAVOUR_PARAMETER
                    + "': " + e.getMessage(), e);
        }
        int threads;
        int threshold;
        int connections;
        try {
            threads = options.threadsGiven() ? options.threads() : d.intParameter(THREADS_PARAMETER, 1);
            threshold = d.intParameter(THRESHOLD_PARAMETER, 1);
            connections = d.intParameter(BulkTransferOperation.CONNECTIONS_PARAMETER,
                    BulkTransferOperation.DEFAULT_CONNECTIONS);
        } catch (IllegalArgumentException e) {
            throw new IOException("bad run description " + options.file() + ": " + e.getMessage(), e);
        }
        String label = options.name() != null ? options.name() : d.resultName();
        Path dir = options.output() != null ? options.output() : DEFAULT_OUTPUT;
        long fingerprint = fingerprint(d, flavour, threads);
        int steps = BenchRunner.plan(d).size();

        boolean server = options.isServer();
        out.println("Bench " + (server ? "server" : "client") + " '" + label + "': flavour " + flavour.label()
                + ", " + steps + " steps" + (flavour == Flavour.NETTY ? ", " + threads + " event loop thread(s)"
                + ", flush every " + threshold : ""));
        List<ResultRow> rows;
        try (TransportFactory factory = flavour.newFactory(threads);
             BenchSession session = server
                     ? BenchSession.accept(options.address(), factory, fingerprint, threshold)
                     : BenchSession.connect(options.remote(), factory, fingerprint, threshold)) {
            out.println(server ? "Client connected, running" : "Connected to " + options.remote() + ", running");
            rows = new BenchRunner(session, d, label, connections, out, server ? dir : null).run();
            // After the run: the upgrade to UCX happens while the first messages flow.
            String path = session.main.path();
            if (path != null) {
                out.println("Path: " + path);
            }
        }
        if (!server) {
            out.println("Bench client finished " + steps + " steps");
            return;
        }
        out.println();
        out.print(ResultSummary.format(rows));
        out.println();
        out.println("Results appended to " + dir.toAbsolutePath());
        Path plot = dir.resolve(PLOT_FILE);
        ResultPlot.write(ResultRow.readDirectory(dir), plot);
        out.println("Plot of all results in that directory: " + plot.toAbsolutePath());
    }

    static long fingerprint(RunDescription d, Flavour flavour, int threads) {
        CRC32 crc = new CRC32();
        crc.update((d.canonical() + "|" + flavour + "|" + threads).getBytes(StandardCharsets.UTF_8));
        return crc.getValue();
    }
}
