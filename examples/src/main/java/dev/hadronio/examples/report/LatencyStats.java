package dev.hadronio.examples.report;

import java.util.Arrays;

/**
 * Statistics of recorded round trips (nanoseconds in, seconds out). Sorts the array it is given; the percentile
 * of rank p is the smallest value with at least p of all values at or below it.
 */
public final class LatencyStats {

    private final long[] sorted;
    private final double average;

    /** Takes ownership of {@code nanos} (sorts it in place). */
    public LatencyStats(long[] nanos) {
        if (nanos.length == 0) {
            throw new IllegalArgumentException("no latencies recorded");
        }
        Arrays.sort(nanos);
        sorted = nanos;
        double sum = 0;
        for (long n : nanos) {
            sum += n;
        }
        average = sum / nanos.length;
    }

    public int count() {
        return sorted.length;
    }

    public double averageSeconds() {
        return average / 1e9;
    }

    public double minSeconds() {
        return sorted[0] / 1e9;
    }

    public double maxSeconds() {
        return sorted[sorted.length - 1] / 1e9;
    }

    /** {@code rank} in (0, 1], e.g. 0.999 for the 99.9th percentile. */
    public double percentileSeconds(double rank) {
        if (!(rank > 0 && rank <= 1)) {
            throw new IllegalArgumentException("percentile rank must be in (0, 1], got " + rank);
        }
        int index = (int) Math.ceil(rank * sorted.length) - 1;
        return sorted[Math.max(0, index)] / 1e9;
    }
}
