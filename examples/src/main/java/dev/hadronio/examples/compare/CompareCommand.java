package dev.hadronio.examples.compare;

import dev.hadronio.examples.Main;
import dev.hadronio.examples.bench.BenchCommand;
import dev.hadronio.examples.bench.ResultPlot;
import dev.hadronio.examples.bench.ResultRow;
import dev.hadronio.examples.bench.RunDescription;
import dev.hadronio.examples.bench.RunDescriptionParser;
import dev.hadronio.examples.cli.Options;
import dev.hadronio.examples.transport.Flavour;

import java.io.IOException;
import java.io.InputStream;
import java.io.PrintStream;
import java.net.InetSocketAddress;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.time.LocalDateTime;
import java.time.format.DateTimeFormatter;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * {@code hadronio bench compare} and {@code hadronio demo}: for each flavour, runs the bench server and client
 * as child JVMs first on the JDK's provider, then on hadroNIO (same run description, same machine, loopback),
 * optionally ucx_perftest at the same sizes, and prints the side-by-side table with speed-up factors and a plot.
 * The demo uses a built-in short run description.
 */
public final class CompareCommand {

    static final String DEMO_RESOURCE = "/dev/hadronio/examples/demo.json";
    static final String DESCRIPTION_FILE = "run.json";

    private final Options options;
    private final PrintStream out;

    public CompareCommand(Options options, PrintStream out) {
        this.options = options;
        this.out = out;
    }

    public void run() throws IOException {
        boolean demo = options.command() == Options.Command.DEMO;
        Path dir = options.output() != null ? options.output()
                : BenchCommand.DEFAULT_OUTPUT.resolve((demo ? "demo-" : "compare-")
                + LocalDateTime.now().format(DateTimeFormatter.ofPattern("yyyyMMdd-HHmmss", Locale.ROOT)));
        Files.createDirectories(dir);
        if (!ResultRow.readDirectory(dir).isEmpty()) {
            throw new IOException("result directory " + dir + " already holds results; choose an empty one");
        }
        Path description = dir.resolve(DESCRIPTION_FILE);
        if (demo) {
            try (InputStream in = CompareCommand.class.getResourceAsStream(DEMO_RESOURCE)) {
                if (in == null) {
                    throw new IOException("the built-in demo description " + DEMO_RESOURCE + " is missing");
                }
                Files.copy(in, description, StandardCopyOption.REPLACE_EXISTING);
            }
        } else {
            Files.copy(options.file(), description, StandardCopyOption.REPLACE_EXISTING);
        }
        RunDescription d = RunDescriptionParser.parse(description);
        List<Flavour> flavours = !options.flavours().isEmpty() ? options.flavours()
                : demo ? Arrays.asList(Flavour.BLOCKING, Flavour.SELECTOR)
                : Arrays.asList(flavourOf(d));

        String disabled = System.getenv(Main.DISABLE_VARIABLE);
        out.println("Comparing the JDK provider with hadroNIO (" + Options.describe(flavours) + ") on loopback");
        out.println("Run description: " + description.toAbsolutePath());
        out.println("Results: " + dir.toAbsolutePath());
        if ("true".equalsIgnoreCase(disabled)) {
            out.println("Note: DISABLE_HADRONIO=true is set, so the hadroNIO runs use the JDK provider too.");
        }
        out.println();

        Map<String, ChildRun.Outcome> outcomes = new LinkedHashMap<>();
        int total = flavours.size() * Provider.values().length;
        int n = 0;
        for (Flavour flavour : flavours) {
            for (Provider provider : Provider.values()) {
                String label = ComparisonTable.label(provider, flavour);
                n++;
                out.println("(" + n + "/" + total + ") " + label);
                List<String> args = new ArrayList<>(Arrays.asList("-f", description.toString(), "-o",
                        dir.toString(), "--flavour", flavour.label()));
                ChildRun run = new ChildRun(provider, label, args, dir.resolve("logs"), out);
                ChildRun.Outcome outcome = run.run(serverAddress());
                outcomes.put(label, outcome);
                out.println(outcome.ok
                        ? String.format(Locale.ROOT, "  %s finished in %.1f s", label, outcome.seconds)
                        : "  " + label + " FAILED: " + outcome.problem);
            }
        }

        List<ResultRow> rows = new ArrayList<>(ResultRow.readDirectory(dir));
        Path perftest = options.perftest() != null ? options.perftest() : Perftest.bundled();
        if (perftest != null) {
            out.println("(perftest) " + perftest);
            rows.addAll(new Perftest(perftest, dir.resolve("logs"), out).run(d));
        }

        out.println();
        out.println("Providers in use:");
        for (Map.Entry<String, ChildRun.Outcome> e : outcomes.entrySet()) {
            ChildRun.Outcome o = e.getValue();
            out.println("  " + e.getKey() + ": " + (o.providerClass == null ? "unknown" : o.providerClass)
                    + (o.ok ? "" : " (failed)"));
        }
        out.println();
        out.print(ComparisonTable.format(rows, flavours));
        if (perftest == null) {
            out.println("(no ucx_perftest figures: pass --perftest /path/to/ucx_perftest)");
        }
        if (!rows.isEmpty()) {
            Path plot = dir.resolve(BenchCommand.PLOT_FILE);
            ResultPlot.write(rows, plot);
            out.println("Plot: " + plot.toAbsolutePath());
        }
        long failed = outcomes.values().stream().filter(o -> !o.ok).count();
        if (failed > 0) {
            throw new IOException(failed + " of " + outcomes.size() + " runs failed (logs in "
                    + dir.resolve("logs").toAbsolutePath() + ")");
        }
    }

    private InetSocketAddress serverAddress() throws IOException {
        if (options.addressGiven()) {
            return options.address();
        }
        return new InetSocketAddress("127.0.0.1", Ports.freePair());
    }

    private static Flavour flavourOf(RunDescription d) throws IOException {
        try {
            return Flavour.parse(d.parameter(BenchCommand.FLAVOUR_PARAMETER, Flavour.BLOCKING.label()));
        } catch (IllegalArgumentException e) {
            throw new IOException("bad run description: " + e.getMessage(), e);
        }
    }
}
