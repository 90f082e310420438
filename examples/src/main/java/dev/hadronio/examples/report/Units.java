package dev.hadronio.examples.report;

import java.util.Locale;

/** Human-readable numbers for tables and progress lines (binary prefixes for sizes, decimal for rates). */
public final class Units {

    private Units() {
    }

    /** 64 B, 16 KiB, 1 MiB, 1.5 GiB. */
    public static String bytes(long n) {
        String[] units = {"B", "KiB", "MiB", "GiB", "TiB"};
        double value = n;
        int unit = 0;
        while (Math.abs(value) >= 1024 && unit < units.length - 1) {
            value /= 1024;
            unit++;
        }
        if (value == Math.rint(value)) {
            return String.format(Locale.ROOT, "%d %s", (long) value, units[unit]);
        }
        return String.format(Locale.ROOT, "%.1f %s", value, units[unit]);
    }

    /** Bytes per second as GB/s or MB/s (decimal, like network figures). */
    public static String rate(double bytesPerSecond) {
        if (bytesPerSecond >= 1e9) {
            return String.format(Locale.ROOT, "%.2f GB/s", bytesPerSecond / 1e9);
        }
        return String.format(Locale.ROOT, "%.1f MB/s", bytesPerSecond / 1e6);
    }

    /** Operations per second as Mmsg/s or kmsg/s. */
    public static String messageRate(double perSecond) {
        if (perSecond >= 1e6) {
            return String.format(Locale.ROOT, "%.2f M/s", perSecond / 1e6);
        }
        return String.format(Locale.ROOT, "%.1f k/s", perSecond / 1e3);
    }

    /** A duration in seconds as ns, µs, ms or s with three significant digits. */
    public static String seconds(double s) {
        if (Double.isNaN(s)) {
            return "n/a";
        }
        double abs = Math.abs(s);
        if (abs < 1e-6) {
            return String.format(Locale.ROOT, "%.0f ns", s * 1e9);
        }
        if (abs < 1e-3) {
            return String.format(Locale.ROOT, "%.2f µs", s * 1e6);
        }
        if (abs < 1) {
            return String.format(Locale.ROOT, "%.2f ms", s * 1e3);
        }
        return String.format(Locale.ROOT, "%.2f s", s);
    }

    /** A ratio such as a speed-up: "2.35x", or "n/a". */
    public static String factor(double f) {
        if (Double.isNaN(f) || Double.isInfinite(f)) {
            return "n/a";
        }
        return String.format(Locale.ROOT, "%.2fx", f);
    }
}
