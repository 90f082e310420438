package dev.hadronio.examples.compare;

import dev.hadronio.examples.bench.ResultColumns;
import dev.hadronio.examples.bench.ResultRow;
import dev.hadronio.examples.bench.ResultSummary;
import dev.hadronio.examples.report.TextTable;
import dev.hadronio.examples.report.Units;
import dev.hadronio.examples.transport.Flavour;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;

/**
 * The side-by-side table of a comparison: per operation, flavour and size the JDK figure, the hadroNIO figure,
 * ucx_perftest's figure and the two ratios. Speed-up is always "how many times better": hadroNIO / JDK for
 * throughput, JDK / hadroNIO for round-trip time; "of perftest" is hadroNIO's share of the native figure.
 */
final class ComparisonTable {

    private ComparisonTable() {
    }

    static String format(List<ResultRow> rows, List<Flavour> flavours) {
        List<ResultRow> medians = ResultSummary.medians(rows);
        Map<String, ResultRow> byKey = new LinkedHashMap<>();
        Set<String> operations = new LinkedHashSet<>();
        for (ResultRow r : medians) {
            byKey.put(key(r.operation, r.benchmark, r.size), r);
            if (!r.benchmark.equals(Perftest.LABEL)) {
                operations.add(r.operation);
            }
        }
        StringBuilder out = new StringBuilder();
        for (String operation : operations) {
            boolean latency = isLatency(medians, operation);
            TextTable table = new TextTable("flavour", "size",
                    latency ? "JDK rtt" : "JDK", latency ? "hadroNIO rtt" : "hadroNIO",
                    latency ? "perftest rtt" : "perftest",
                    "speed-up vs JDK", "of perftest", "cpu/op JDK", "cpu/op hadroNIO");
            for (Flavour flavour : flavours) {
                for (int size : sizes(medians, operation)) {
                    ResultRow jdk = byKey.get(key(operation, label(Provider.JDK, flavour), size));
                    ResultRow ours = byKey.get(key(operation, label(Provider.HADRONIO, flavour), size));
                    ResultRow native_ = byKey.get(key(operation, Perftest.LABEL, size));
                    if (jdk == null && ours == null) {
                        continue;
                    }
                    double j = figure(jdk, latency);
                    double h = figure(ours, latency);
                    double p = figure(native_, latency);
                    table.row(flavour.label(), Units.bytes(size), show(j, latency), show(h, latency),
                            show(p, latency), Units.factor(latency ? j / h : h / j),
                            Units.factor(latency ? p / h : h / p), cpu(jdk), cpu(ours));
                }
            }
            if (!table.isEmpty()) {
                out.append(operation).append(latency ? " (average round trip, lower is better)"
                        : " (throughput, higher is better)").append(':').append(System.lineSeparator());
                out.append(table).append(System.lineSeparator());
            }
        }
        return out.toString();
    }

    static String label(Provider provider, Flavour flavour) {
        return provider.label() + " " + flavour.label();
    }

    private static String key(String operation, String benchmark, int size) {
        return operation + '\u0000' + benchmark + '\u0000' + size;
    }

    private static boolean isLatency(List<ResultRow> rows, String operation) {
        for (ResultRow r : rows) {
            if (r.operation.equals(operation)) {
                return r.isLatency();
            }
        }
        return false;
    }

    private static List<Integer> sizes(List<ResultRow> rows, String operation) {
        Set<Integer> sizes = new TreeSet<>();
        for (ResultRow r : rows) {
            if (r.operation.equals(operation)) {
                sizes.add(r.size);
            }
        }
        return new ArrayList<>(sizes);
    }

    private static double figure(ResultRow r, boolean latency) {
        if (r == null) {
            return Double.NaN;
        }
        return latency ? r.value(ResultColumns.AVERAGE) : r.value(ResultColumns.DATA_THROUGHPUT);
    }

    private static String show(double v, boolean latency) {
        if (Double.isNaN(v)) {
            return "n/a";
        }
        return latency ? Units.seconds(v) : Units.rate(v);
    }

    /** Both processes' CPU time per operation, added up. */
    private static String cpu(ResultRow r) {
        if (r == null) {
            return "n/a";
        }
        return Units.seconds(r.value(ResultColumns.SERVER_CPU) + r.value(ResultColumns.CLIENT_CPU));
    }
}
