package dev.hadronio.examples.report;

import org.HdrHistogram.Histogram;

/**
 * Statistics of recorded round trips (nanoseconds in, seconds out), read from an HdrHistogram: memory stays bounded
 * however many round trips are recorded, and the histograms of several connections merge into one. Values carry
 * three significant digits (at most 0.1 % off); the percentile of rank p is the value at or below which at least p of
 * all round trips fall.
 */
public final class LatencyStats {

    /** The longest round trip a histogram records: one hour. */
    public static final long HIGHEST_NANOS = 3_600_000_000_000L;

    private final Histogram histogram;

    /** Reads {@code histogram} (no copy: record nothing more into it while this is in use). */
    public LatencyStats(Histogram histogram) {
        if (histogram.getTotalCount() == 0) {
            throw new IllegalArgumentException("no latencies recorded");
        }
        this.histogram = histogram;
    }

    /** An empty histogram for round trips in nanoseconds, 1 ns to an hour, three significant digits. */
    public static Histogram newHistogram() {
        return new Histogram(HIGHEST_NANOS, 3);
    }

    public long count() {
        return histogram.getTotalCount();
    }

    public double averageSeconds() {
        return histogram.getMean() / 1e9;
    }

    public double minSeconds() {
        return histogram.getMinValue() / 1e9;
    }

    public double maxSeconds() {
        return histogram.getMaxValue() / 1e9;
    }

    /** {@code rank} in (0, 1], e.g. 0.999 for the 99.9th percentile. */
    public double percentileSeconds(double rank) {
        if (!(rank > 0 && rank <= 1)) {
            throw new IllegalArgumentException("percentile rank must be in (0, 1], got " + rank);
        }
        return histogram.getValueAtPercentile(rank * 100) / 1e9;
    }
}
