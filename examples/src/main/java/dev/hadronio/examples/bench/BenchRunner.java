package dev.hadronio.examples.bench;

import dev.hadronio.examples.bench.RunDescription.Iteration;
import dev.hadronio.examples.bench.RunDescription.Operation;
import dev.hadronio.examples.report.Units;
import dev.hadronio.examples.util.CpuClock;
import dev.hadronio.examples.util.Progress;

import java.io.IOException;
import java.io.PrintStream;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * Walks a run description in Observatory's order (operation, mode, iteration, repetition) on both sides in lock
 * step: barrier, prepare, warm-up, barrier, measure (with process CPU time), exchange of the client's figures.
 * The server appends each step's row to its CSV file at once and prints a progress line.
 */
final class BenchRunner {

    /** One measured step of the plan. */
    static final class Step {
        final int index;
        final Operation operation;
        final OperationMode mode;
        final Iteration iteration;
        final int repetition;

        Step(int index, Operation operation, OperationMode mode, Iteration iteration, int repetition) {
            this.index = index;
            this.operation = operation;
            this.mode = mode;
            this.iteration = iteration;
            this.repetition = repetition;
        }
    }

    private final BenchSession session;
    private final RunDescription description;
    private final String label;
    private final int bulkConnections;
    private final PrintStream out;
    private final Path resultDir;

    BenchRunner(BenchSession session, RunDescription description, String label, int bulkConnections,
                PrintStream out, Path resultDir) {
        this.session = session;
        this.description = description;
        this.label = label;
        this.bulkConnections = bulkConnections;
        this.out = out;
        this.resultDir = resultDir;
    }

    static List<Step> plan(RunDescription d) {
        List<Step> steps = new ArrayList<>();
        for (Operation op : d.operations()) {
            for (OperationMode mode : op.modes) {
                for (Iteration it : op.iterations) {
                    for (int r = 0; r < op.repetitions; r++) {
                        steps.add(new Step(steps.size(), op, mode, it, r));
                    }
                }
            }
        }
        return steps;
    }

    private BenchOperation operation(OperationKind kind) {
        switch (kind) {
            case MESSAGING_THROUGHPUT:
                return new MessagingThroughputOperation();
            case MESSAGING_PING_PONG:
                return new PingPongOperation();
            case BULK_TRANSFER:
                return new BulkTransferOperation(bulkConnections);
            default:
                throw new IllegalStateException("unhandled operation " + kind);
        }
    }

    /** Runs every step; returns the rows on the server, an empty list on the client. */
    List<ResultRow> run() throws IOException {
        List<Step> steps = plan(description);
        Map<OperationKind, BenchOperation> operations = new LinkedHashMap<>();
        List<ResultRow> rows = new ArrayList<>();
        for (Step step : steps) {
            OperationKind kind = step.operation.kind;
            BenchOperation op = operations.computeIfAbsent(kind, this::operation);
            String name = String.format(Locale.ROOT, "[%" + digits(steps.size()) + "d/%d] %s %s rep %d/%d",
                    step.index + 1, steps.size(), kind.fileName(step.mode), Units.bytes(step.iteration.size),
                    step.repetition + 1, step.operation.repetitions);

            session.control.sync(3 * step.index);
            op.prepare(session);
            op.warmUp(session, step.mode, step.iteration);
            session.control.sync(3 * step.index + 1);

            session.progress.set(0);
            Measurement m;
            long cpuBefore;
            long cpuAfter;
            Progress progress = session.server
                    ? Progress.start(name, op.units(step.iteration), session.progress::get, out) : null;
            try {
                cpuBefore = CpuClock.processNanos();
                m = op.measure(session, step.mode, step.iteration);
                cpuAfter = CpuClock.processNanos();
            } finally {
                if (progress != null) {
                    progress.close();
                }
            }
            double cpu = CpuClock.perOperation(cpuBefore, cpuAfter, step.iteration.count);
            if (!session.server) {
                session.control.sendDoubles(cpu);
                continue;
            }
            double clientCpu = session.control.receiveDoubles(1)[0];
            Map<String, Double> values = new LinkedHashMap<>(m.values);
            values.put(ResultColumns.SERVER_CPU, cpu);
            values.put(ResultColumns.CLIENT_CPU, clientCpu);
            ResultRow row = new ResultRow(kind.fileName(step.mode), label, step.repetition, step.iteration.size,
                    values);
            row.appendTo(resultDir, kind);
            rows.add(row);
            out.println(name + ": " + describe(row));
        }
        session.control.sync(3 * steps.size());
        return rows;
    }

    private static int digits(int n) {
        return Integer.toString(n).length();
    }

    static String describe(ResultRow r) {
        String cpu = "cpu/op " + Units.seconds(r.value(ResultColumns.SERVER_CPU)) + " server, "
                + Units.seconds(r.value(ResultColumns.CLIENT_CPU)) + " client";
        if (r.isLatency()) {
            return "avg " + Units.seconds(r.value(ResultColumns.AVERAGE))
                    + ", 50% " + Units.seconds(r.value(ResultColumns.P50))
                    + ", 99% " + Units.seconds(r.value(ResultColumns.P99))
                    + ", 99.99% " + Units.seconds(r.value(ResultColumns.P9999)) + "; " + cpu;
        }
        return Units.rate(r.value(ResultColumns.DATA_THROUGHPUT)) + ", "
                + Units.messageRate(r.value(ResultColumns.OPERATION_THROUGHPUT)) + "; " + cpu;
    }
}
