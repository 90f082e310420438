package dev.hadronio.examples.util;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.HashMap;
import java.util.Locale;
import java.util.Map;
import java.util.function.Consumer;

/**
 * A benchmark's warm-up that lasts until the JIT compilers of the JVMs taking part are nearly idle.
 * On a small host the compilers of a large application (Jetty's server and client compile for tens
 * of seconds of CPU) share the cores with the measured phase for a long time, and a measurement
 * taken while they run says more about them than about the code measured.
 *
 * <p>The warm-up lasts at least {@code minSeconds}, then until the compiler threads of every
 * watched JVM together used less than {@link #QUIET} of one core over the last second, at most
 * {@code maxSeconds}. Compiler threads are found by name under {@code /proc/<pid>/task} and their
 * CPU time is read from {@code schedstat}; where that cannot be read the warm-up lasts
 * {@code minSeconds}.
 */
public final class WarmUp {
    /** Compiler CPU per second of warm-up, in cores, below which the JVMs count as compiled. */
    public static final double QUIET = 0.05;

    private static final long WINDOW_NANOS = 1_000_000_000L;

    private final long[] pids;
    private final long minNanos;
    private final long maxNanos;
    private final long start;
    private final Map<String, Long> seen = new HashMap<>();
    private long windowStart;
    private boolean readable;
    private double share = Double.NaN;
    private long ended = -1;

    /** A warm-up watching this JVM and the JVMs {@code others} (process ids), starting now. */
    public WarmUp(double minSeconds, double maxSeconds, long... others) {
        pids = new long[others.length + 1];
        pids[0] = ProcessHandle.current().pid();
        System.arraycopy(others, 0, pids, 1, others.length);
        minNanos = (long) (minSeconds * 1e9);
        maxNanos = Math.max(minNanos, (long) (maxSeconds * 1e9));
        start = System.nanoTime();
        windowStart = start;
        readable = maxNanos > minNanos && sample() >= 0;
    }

    /**
     * Whether the warm-up is over; cheap enough to call between requests. {@code progress} hears
     * about the compilers once a second while the warm-up goes on longer than its minimum, and
     * once when it ends.
     */
    public boolean over(Consumer<String> progress) {
        if (ended >= 0) {
            return true;
        }
        long now = System.nanoTime();
        long elapsed = now - start;
        if (!readable) {
            return elapsed >= minNanos && end(now, progress);
        }
        if (now - windowStart < WINDOW_NANOS) {
            return false;
        }
        long used = sample();
        if (used < 0) {
            readable = false;
            return elapsed >= minNanos && end(now, progress);
        }
        share = used / (double) (now - windowStart);
        windowStart = now;
        if (elapsed >= minNanos && (quiet(share) || elapsed >= maxNanos)) {
            return end(now, progress);
        }
        if (elapsed >= minNanos) {
            progress.accept(String.format(Locale.ROOT, "warm-up %.0f s: the JIT compilers use %.0f %% of a core, waiting for them",
                    elapsed / 1e9, share * 100));
        }
        return false;
    }

    /** Waits until the warm-up is over (the caller's load runs on other threads meanwhile). */
    public void await(Consumer<String> progress) throws InterruptedException {
        while (!over(progress)) {
            Thread.sleep(50);
        }
    }

    /** How long the warm-up lasted (so far, if it goes on), in seconds. */
    public double seconds() {
        return ((ended >= 0 ? ended : System.nanoTime()) - start) / 1e9;
    }

    /** Whether compilers that used {@code share} of a core over a second count as idle. */
    static boolean quiet(double share) {
        return share < QUIET;
    }

    private boolean end(long now, Consumer<String> progress) {
        ended = now;
        if (maxNanos > minNanos) {
            String compilers = !readable ? "their CPU time could not be read"
                    : Double.isNaN(share) ? "not measured" : String.format(Locale.ROOT, "%.0f %% of a core", share * 100);
            progress.accept(String.format(Locale.ROOT, "warm-up over after %.0f s (JIT compilers: %s%s)", seconds(),
                    compilers, readable && !quiet(share) ? ", the longest warm-up allowed" : ""));
        }
        return true;
    }

    /**
     * Compiler CPU nanoseconds of the watched JVMs since the last sample, or -1 if they cannot be
     * read (a JVM has ended, or no compiler thread could be read: every JVM has some).
     */
    private long sample() {
        long used = 0;
        int found = 0;
        for (long pid : pids) {
            Path tasks = Paths.get("/proc", Long.toString(pid), "task");
            try (DirectoryStream<Path> entries = Files.newDirectoryStream(tasks)) {
                for (Path task : entries) {
                    long nanos = compilerNanos(task);
                    if (nanos >= 0) {
                        found++;
                        Long before = seen.put(pid + "/" + task.getFileName(), nanos);
                        used += nanos - (before == null ? 0 : before);
                    }
                }
            } catch (IOException e) {
                return -1;
            }
        }
        return found == 0 ? -1 : used;
    }

    /** CPU nanoseconds of thread {@code task} if it is a JIT compiler thread, else -1. */
    static long compilerNanos(Path task) {
        try {
            String name = new String(Files.readAllBytes(task.resolve("comm")), StandardCharsets.UTF_8).trim();
            if (!isCompiler(name)) {
                return -1;
            }
            String schedstat = new String(Files.readAllBytes(task.resolve("schedstat")), StandardCharsets.UTF_8).trim();
            return Long.parseLong(schedstat.split(" ")[0]);
        } catch (IOException | RuntimeException e) {
            // the thread ended meanwhile, or the kernel keeps no schedstat: not counted
            return -1;
        }
    }

    /** Whether a thread name (as the kernel shortens it) is one of HotSpot's JIT compiler threads. */
    static boolean isCompiler(String name) {
        return name.startsWith("C1 CompilerThre") || name.startsWith("C2 CompilerThre");
    }
}
