package dev.hadronio.examples.hosts;

import java.io.PrintStream;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Locale;
import java.util.Set;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicReference;

/**
 * {@code hadronio hosts check}: runs the checks against a {@code hadronio hosts serve} on another
 * host, one after another, each within its time limit; prints each as it goes and a table at the
 * end, and writes a JUnit XML report.
 */
final class HostChecks {
    private final Target target;
    private final PrintStream out;

    HostChecks(Target target, PrintStream out) {
        this.target = target;
        this.out = out;
    }

    /** Every check in its order: streams, libraries, many connections, faults, and the power-off last. */
    List<Check> all() {
        List<Check> checks = new ArrayList<>();
        checks.addAll(StreamChecks.all(target));
        checks.addAll(AppChecks.all(target));
        checks.add(ScaleCheck.check(target));
        AtomicReference<FaultChecks.Steady> steady = new AtomicReference<>();
        checks.add(new Check("resourcesBefore", "descriptors and memory before the faults", 120, () -> {
            steady.set(new FaultChecks.Steady(target));
            return String.format(Locale.ROOT, "%d descriptors here, %d on the server", steady.get().fds, steady.get().serverFds);
        }));
        checks.addAll(FaultChecks.all(target));
        checks.add(FaultChecks.steady(target, steady));
        if (target.mayPowerOff) {
            checks.add(FaultChecks.poweredOff(target));
        }
        return checks;
    }

    /** Runs {@code checks} (those named in {@code only}, if any); returns the report. */
    Report run(List<Check> checks, Set<String> only, Path junit) throws Exception {
        Report report = new Report();
        List<Check> chosen = new ArrayList<>();
        Set<String> unknown = new LinkedHashSet<>(only);
        for (Check check : checks) {
            if (only.isEmpty() || only.contains(check.name)) {
                chosen.add(check);
            }
            unknown.remove(check.name);
        }
        if (!unknown.isEmpty()) {
            List<String> names = new ArrayList<>();
            checks.forEach(check -> names.add(check.name));
            throw new IllegalArgumentException("no check named " + String.join(", ", unknown) + "; the checks: " + String.join(", ", names));
        }
        ExecutorService runner = Executors.newCachedThreadPool(r -> {
            Thread thread = new Thread(r, "hosts-check");
            thread.setDaemon(true);
            return thread;
        });
        int index = 0;
        for (Check check : chosen) {
            index++;
            out.printf(Locale.ROOT, "hosts: [%d/%d] %s ...%n", index, chosen.size(), check.title);
            out.flush();
            long start = System.nanoTime();
            Future<String> result = runner.submit(check.body::run);
            boolean passed;
            boolean skipped = false;
            String detail;
            try {
                detail = result.get(check.limitSeconds, TimeUnit.SECONDS);
                passed = true;
            } catch (TimeoutException e) {
                result.cancel(true);
                passed = false;
                detail = "no result within " + check.limitSeconds + " s";
            } catch (ExecutionException e) {
                Throwable cause = e.getCause();
                skipped = cause instanceof Check.Skipped;
                passed = false;
                detail = cause.getMessage() == null ? cause.toString() : cause.getMessage();
                if (!skipped) {
                    cause.printStackTrace(out);
                }
            }
            double seconds = (System.nanoTime() - start) / 1e9;
            Report.Outcome outcome = new Report.Outcome(check, passed, skipped, detail, seconds);
            out.printf(Locale.ROOT, "hosts: [%d/%d] %s: %s (%.1f s) %s%n", index, chosen.size(), check.title, outcome.result(),
                    seconds, detail);
            out.flush();
            report.outcomes.add(outcome);
            if (junit != null) {
                report.writeJunit(junit, "dev.hadronio.hosts.AcrossHosts");
            }
        }
        runner.shutdownNow();
        out.println();
        out.print(report.table());
        out.flush();
        return report;
    }
}
