package dev.hadronio.examples.bench;

import dev.hadronio.examples.report.LinePlot;

import java.io.IOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

/**
 * The plot of a result directory: one panel per operation (throughput in GB/s or average round trip in µs over
 * message size), one line per benchmark label (provider and flavour), medians of the repetitions. Labels that
 * start with "JDK" are drawn dashed, in the colour of the same label starting with "hadroNIO" (same flavour).
 */
public final class ResultPlot {

    private static final String JDK_PREFIX = "JDK";
    private static final String HADRONIO_PREFIX = "hadroNIO";

    private ResultPlot() {
    }

    public static void write(List<ResultRow> rows, Path file) throws IOException {
        List<ResultRow> medians = ResultSummary.medians(rows);
        Map<String, Integer> colors = new LinkedHashMap<>();
        for (ResultRow r : medians) {
            colors.putIfAbsent(colorKey(r.benchmark), colors.size());
        }
        Map<String, Map<String, TreeMap<Integer, Double>>> byOperation = new LinkedHashMap<>();
        for (ResultRow r : medians) {
            double y = r.isLatency() ? r.value(ResultColumns.AVERAGE) * 1e6
                    : r.value(ResultColumns.DATA_THROUGHPUT) / 1e9;
            byOperation.computeIfAbsent(r.operation, k -> new LinkedHashMap<>())
                    .computeIfAbsent(r.benchmark, k -> new TreeMap<>())
                    .put(r.size, y);
        }
        List<LinePlot.Panel> panels = new ArrayList<>();
        for (Map.Entry<String, Map<String, TreeMap<Integer, Double>>> op : byOperation.entrySet()) {
            boolean latency = isLatencyOperation(op.getKey(), medians);
            List<LinePlot.Series> series = new ArrayList<>();
            for (Map.Entry<String, TreeMap<Integer, Double>> line : op.getValue().entrySet()) {
                double[] x = new double[line.getValue().size()];
                double[] y = new double[x.length];
                int i = 0;
                for (Map.Entry<Integer, Double> point : line.getValue().entrySet()) {
                    x[i] = point.getKey();
                    y[i] = point.getValue();
                    i++;
                }
                series.add(new LinePlot.Series(line.getKey(), x, y, colors.get(colorKey(line.getKey())),
                        line.getKey().startsWith(JDK_PREFIX)));
            }
            panels.add(new LinePlot.Panel(
                    latency ? op.getKey() + ": average round trip (lower is better)"
                            : op.getKey() + " (higher is better)",
                    latency ? "round trip [µs], log scale" : "throughput [GB/s]", series, latency));
        }
        if (panels.isEmpty()) {
            throw new IOException("no results to plot");
        }
        LinePlot.writePng(file, "hadroNIO benchmark results", panels);
    }

    /** "JDK selector" and "hadroNIO selector" share a colour. */
    private static String colorKey(String label) {
        if (label.startsWith(JDK_PREFIX)) {
            return label.substring(JDK_PREFIX.length());
        }
        if (label.startsWith(HADRONIO_PREFIX)) {
            return label.substring(HADRONIO_PREFIX.length());
        }
        return label;
    }

    private static boolean isLatencyOperation(String operation, List<ResultRow> rows) {
        for (ResultRow r : rows) {
            if (r.operation.equals(operation)) {
                return r.isLatency();
            }
        }
        return false;
    }
}
