package dev.hadronio.examples.util;

import java.lang.management.ManagementFactory;
import java.lang.management.OperatingSystemMXBean;

/** CPU time used by this whole process (all threads, including the provider's), in nanoseconds. */
public final class CpuClock {

    private static final com.sun.management.OperatingSystemMXBean BEAN = bean();

    private CpuClock() {
    }

    private static com.sun.management.OperatingSystemMXBean bean() {
        OperatingSystemMXBean os = ManagementFactory.getOperatingSystemMXBean();
        return os instanceof com.sun.management.OperatingSystemMXBean
                ? (com.sun.management.OperatingSystemMXBean) os : null;
    }

    /** Process CPU time so far, or -1 if this JVM cannot tell. */
    public static long processNanos() {
        return BEAN == null ? -1 : BEAN.getProcessCpuTime();
    }

    /** CPU seconds per operation between two readings, or NaN if unknown. */
    public static double perOperation(long before, long after, long operations) {
        if (before < 0 || after < 0 || operations <= 0) {
            return Double.NaN;
        }
        return (after - before) / 1e9 / operations;
    }
}
