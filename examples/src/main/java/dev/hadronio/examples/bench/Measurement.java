package dev.hadronio.examples.bench;

import dev.hadronio.examples.report.LatencyStats;

import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.Map;

/** The figures of one measured step, keyed by Observatory's CSV column names (values in bytes/s, ops/s, s). */
final class Measurement {

    final Map<String, Double> values;

    private Measurement(Map<String, Double> values) {
        this.values = Collections.unmodifiableMap(values);
    }

    static Measurement throughput(double bytesPerSecond, double operationsPerSecond) {
        Map<String, Double> v = new LinkedHashMap<>();
        v.put(ResultColumns.DATA_THROUGHPUT, bytesPerSecond);
        v.put(ResultColumns.OPERATION_THROUGHPUT, operationsPerSecond);
        return new Measurement(v);
    }

    static Measurement latency(LatencyStats stats, double operationsPerSecond) {
        Map<String, Double> v = new LinkedHashMap<>();
        v.put(ResultColumns.P50, stats.percentileSeconds(0.5));
        v.put(ResultColumns.P95, stats.percentileSeconds(0.95));
        v.put(ResultColumns.P9999, stats.percentileSeconds(0.9999));
        v.put(ResultColumns.P999, stats.percentileSeconds(0.999));
        v.put(ResultColumns.P99, stats.percentileSeconds(0.99));
        v.put(ResultColumns.AVERAGE, stats.averageSeconds());
        v.put(ResultColumns.MAXIMUM, stats.maxSeconds());
        v.put(ResultColumns.MINIMUM, stats.minSeconds());
        v.put(ResultColumns.OPERATION_THROUGHPUT, operationsPerSecond);
        return new Measurement(v);
    }
}
