package dev.hadronio.examples.bench;

import dev.hadronio.examples.report.TextTable;
import dev.hadronio.examples.report.Units;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/** The readable tables at the end of a bench run: medians over repetitions, one line per operation and size. */
public final class ResultSummary {

    private ResultSummary() {
    }

    /** Groups rows by operation, benchmark and size (in first-seen order) and takes each column's median. */
    public static List<ResultRow> medians(List<ResultRow> rows) {
        Map<String, List<ResultRow>> groups = new LinkedHashMap<>();
        for (ResultRow r : rows) {
            groups.computeIfAbsent(r.operation + '\u0000' + r.benchmark + '\u0000' + r.size, k -> new ArrayList<>())
                    .add(r);
        }
        List<ResultRow> medians = new ArrayList<>();
        for (List<ResultRow> group : groups.values()) {
            ResultRow first = group.get(0);
            Map<String, Double> values = new LinkedHashMap<>();
            for (String column : first.values.keySet()) {
                double[] v = new double[group.size()];
                for (int i = 0; i < v.length; i++) {
                    v[i] = group.get(i).value(column);
                }
                values.put(column, median(v));
            }
            medians.add(new ResultRow(first.operation, first.benchmark, group.size(), first.size, values));
        }
        return medians;
    }

    /** The median (the mean of the middle two for an even count). */
    public static double median(double[] values) {
        double[] v = values.clone();
        Arrays.sort(v);
        int n = v.length;
        return n % 2 == 1 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
    }

    /** Throughput and latency tables; the repetition column of a median row holds the number of repetitions. */
    public static String format(List<ResultRow> rows) {
        List<ResultRow> medians = medians(rows);
        TextTable throughput = new TextTable("operation", "benchmark", "size", "reps", "throughput", "messages/s",
                "cpu/op server", "cpu/op client");
        TextTable latency = new TextTable("operation", "benchmark", "size", "reps", "average", "min", "50%", "95%",
                "99%", "99.9%", "99.99%", "max", "cpu/op server", "cpu/op client");
        for (ResultRow r : medians) {
            String cpuServer = Units.seconds(r.value(ResultColumns.SERVER_CPU));
            String cpuClient = Units.seconds(r.value(ResultColumns.CLIENT_CPU));
            if (r.isLatency()) {
                latency.row(r.operation, r.benchmark, Units.bytes(r.size), Integer.toString(r.repetition),
                        Units.seconds(r.value(ResultColumns.AVERAGE)), Units.seconds(r.value(ResultColumns.MINIMUM)),
                        Units.seconds(r.value(ResultColumns.P50)), Units.seconds(r.value(ResultColumns.P95)),
                        Units.seconds(r.value(ResultColumns.P99)), Units.seconds(r.value(ResultColumns.P999)),
                        Units.seconds(r.value(ResultColumns.P9999)), Units.seconds(r.value(ResultColumns.MAXIMUM)),
                        cpuServer, cpuClient);
            } else {
                throughput.row(r.operation, r.benchmark, Units.bytes(r.size), Integer.toString(r.repetition),
                        Units.rate(r.value(ResultColumns.DATA_THROUGHPUT)),
                        Units.messageRate(r.value(ResultColumns.OPERATION_THROUGHPUT)), cpuServer, cpuClient);
            }
        }
        StringBuilder out = new StringBuilder();
        if (!throughput.isEmpty()) {
            out.append("Throughput (median of repetitions):").append(System.lineSeparator()).append(throughput);
        }
        if (!latency.isEmpty()) {
            if (out.length() > 0) {
                out.append(System.lineSeparator());
            }
            out.append("Round trips (median of repetitions):").append(System.lineSeparator()).append(latency);
        }
        return out.toString();
    }
}
