package dev.hadronio.examples.compare;

import dev.hadronio.examples.bench.RunDescription;
import java.io.IOException;
import java.io.PrintStream;
import java.nio.file.Path;
import java.util.Locale;
import java.util.Map;

/**
 * How fast the host is right now, as {@code ucx_perftest tag_lat} sees it: the one-way latency of
 * 64 B messages between two processes over shared memory, which depends mostly on how long a cache
 * line takes from one core to another. On a virtual machine that moves between levels (the
 * hypervisor places the virtual CPUs on host cores that share a cache, then on cores that do not),
 * and a run that meets the slow level is slower at every size, hadroNIO's figures far more than the
 * kernel's. Measured before and after each provider's run, it tells whether the two providers of
 * one ratio met the same host.
 */
public final class HostPhase {
    /** What the host latency rows of a table are, for the line under it. */
    public static final String LEGEND = "host latency: ucx_perftest tag_lat, 64 B one way between two processes, before and after "
            + "each run; runs of one ratio that met different levels are not comparable (see docs/performance.md, \"How to read figures from a small virtual machine\")";

    /** The label of a table's host latency row. */
    public static final String ROW = "host latency (before / after)";

    /** Round trips of one probe: about 0.1 s of measuring, plus the two processes' start. */
    private static final int ROUND_TRIPS = 100_000;

    private final Perftest perftest;
    private final PrintStream out;
    private boolean failed;

    private HostPhase(Perftest perftest, PrintStream out) {
        this.perftest = perftest;
        this.out = out;
    }

    /**
     * A probe with {@code executable}, or the {@code ucx_perftest} built with the bundled UCX under
     * {@code target/release/build}; its logs go to {@code logs}. Says on {@code out} when there is
     * none (the figures are then NaN).
     */
    public static HostPhase find(Path executable, Path logs, PrintStream out) {
        Path found = executable != null ? executable : Perftest.bundled();
        if (found == null) {
            out.println("(no ucx_perftest under target/release/build: the host's latency is not measured; "
                    + "run from the source tree or pass --perftest)");
            return new HostPhase(null, out);
        }
        return new HostPhase(new Perftest(found, logs, out), out);
    }

    /**
     * The one-way latency of 64 B in µs (average over the probe), or NaN where there is no
     * {@code ucx_perftest} or it failed (said once on {@code out}; the benchmark goes on).
     */
    public double measure() {
        if (perftest == null || failed) {
            return Double.NaN;
        }
        try {
            Map<String, Double> figures = perftest.measure("tag_lat", new RunDescription.Iteration(64, ROUND_TRIPS, ROUND_TRIPS / 10));
            return figures.get("overall_lat");
        } catch (IOException | RuntimeException e) {
            failed = true;
            out.println("(ucx_perftest failed, the host's latency is not measured further: " + e.getMessage() + ")");
            return Double.NaN;
        }
    }

    /** Says a run's {@code before} and {@code after} on the progress output, where either was measured. */
    public void say(double before, double after) {
        if (!Double.isNaN(before) || !Double.isNaN(after)) {
            out.println("  host: ucx_perftest tag_lat 64 B one way " + format(before, after) + " (before / after)");
        }
    }

    /** {@code before} and {@code after} as "0.31 / 0.30 us", or "-" without figures. */
    public static String format(double before, double after) {
        if (Double.isNaN(before) && Double.isNaN(after)) {
            return "-";
        }
        return String.format(Locale.ROOT, "%s / %s us", one(before), one(after));
    }

    private static String one(double micros) {
        return Double.isNaN(micros) ? "-" : String.format(Locale.ROOT, "%.3f", micros);
    }
}
