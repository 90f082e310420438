package dev.hadronio.reliability;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertNull;
import static org.junit.Assert.assertTrue;

import dev.hadronio.reliability.Reliability.Mode;
import java.util.Locale;
import org.junit.Rule;
import org.junit.Test;
import org.junit.rules.TestRule;

/**
 * Connection churn: {@code N} connect/transfer/close cycles (default 1000, property
 * {@code hadronio.reliability.churn}) in blocking mode and through selectors, for the JDK's provider and
 * ours. After the cycles the JVM must hold what it held after a warm-up batch: the same open file
 * descriptors, memory mappings and threads, and about the same native memory and live Java heap.
 *
 * <p>The cycles run in a child JVM ({@link ChurnProgram}, server and client in that one JVM) with the
 * provider set JVM-wide, the serial collector and a fixed heap touched at start-up
 * ({@code -Xms=-Xmx}, {@code -XX:+AlwaysPreTouch}): its resident memory then moves only with native
 * memory, metaspace and compiled code, and nothing left behind by other test classes in the Gradle
 * test JVM is counted. The warm-up batch (10 % of {@code N}, 100..500 cycles) lets the JIT, the malloc
 * arenas and the UCX memory pools reach their working size first.
 *
 * <p>Tolerances (after minus before, after the warm-up):
 * <ul>
 * <li>file descriptors: {@value #FD_TOLERANCE} (the child waits up to 10 s for closes in progress);
 * <li>memory mappings ({@code /proc/self/maps}) other than UCX's shared-memory segments:
 *     {@value #MAPPING_TOLERANCE};
 * <li>mappings of UCX's shared-memory segments: {@value #UCX_MAPPING_TOLERANCE}. Every worker maps its
 *     own segments and, through its endpoints, its peers', so a worker or endpoint that outlives its
 *     connection or selector shows up here at once, long before it is visible in the resident size. The
 *     workers kept for reuse ({@code hadronio.spareWorkers}, 4) keep their endpoints to each other, up to
 *     12 of them with two mappings each, and which of them know each other depends on how the last
 *     cycles paired them (measured: 12 fewer to 12 more than before, over 1000 blocking cycles); one
 *     endpoint left behind per cycle would add thousands;
 * <li>threads: {@value #THREAD_TOLERANCE};
 * <li>live heap after {@code System.gc()}: {@value #HEAP_TOLERANCE_KIB} KiB;
 * <li>resident memory: {@value #RSS_TOLERANCE_KIB} KiB. This is generous on purpose: compiled code and
 *     malloc arenas keep growing after the warm-up, by ~3 MiB over 1000 cycles and up to ~19 MiB over
 *     10,000 with the JDK's provider (which keeps no native state per connection). A leak of one UCX
 *     worker or receive-slot set per connection is far larger than this bound at 1000 cycles; 10,000
 *     cycles find leaks of a few KiB per cycle.
 * </ul>
 */
public class ChurnTest extends ProviderModeTest {
    static final int FD_TOLERANCE = 4;
    static final int MAPPING_TOLERANCE = 16;
    static final int UCX_MAPPING_TOLERANCE = 24;
    static final int THREAD_TOLERANCE = 2;
    static final long HEAP_TOLERANCE_KIB = 4 * 1024;
    static final long RSS_TOLERANCE_KIB = 32 * 1024;

    /** Measured cycles; {@code -Dhadronio.reliability.churn=10000} for the large run. */
    static final int CYCLES = Integer.getInteger("hadronio.reliability.churn", 1000);
    static final int WARMUP = Math.max(100, Math.min(500, CYCLES / 10));
    /** Bounds a hang only (a cycle takes about a millisecond; 50 ms each still fits). */
    static final long TIMEOUT_SECONDS = 120 + (CYCLES + WARMUP) / 20;

    @Rule
    public final TestRule rules = resources.withTimeout(TIMEOUT_SECONDS + 30);

    @Test
    public void resourcesReturnToTheirLevel() throws Exception {
        ChildJvm child = resources.add(new ChildJvm.Builder("churn", ChurnProgram.class).provider(provider)
                .jvm("-XX:+UseSerialGC", "-Xms128m", "-Xmx128m", "-XX:+AlwaysPreTouch")
                .args(mode == Mode.SELECTOR ? "selector" : "blocking", CYCLES, WARMUP).start());
        int status = child.awaitExit(TIMEOUT_SECONDS);
        assertNull("the churn JVM failed\n" + child.output(), child.find(line -> line.startsWith("FAILED")
                || line.startsWith("STUCK")));
        assertEquals("exit status of the churn JVM\n" + child.output(), 0, status);

        Footprint before = Footprint.parse(child.awaitValue("BEFORE", 1));
        Footprint after = Footprint.parse(child.awaitValue("AFTER", 1));
        String[] cycles = child.awaitValue("CYCLES", 1).split(" ");
        int count = Integer.parseInt(cycles[0]);
        long millis = Long.parseLong(cycles[1]);
        assertEquals("cycles run", CYCLES, count);

        String name = getClass().getSimpleName() + "[" + provider + "-" + mode.name().toLowerCase(Locale.ROOT) + "-" + count + "]";
        Reliability.figure(name, "time per cycle", millis / (double) count, "ms");
        Reliability.figure(name, "open fds before/after", before.fds + " / " + after.fds, "");
        Reliability.figure(name, "memory mappings before/after", before.mappings + " / " + after.mappings, "");
        Reliability.figure(name, "UCX segment mappings before/after", before.ucxMappings + " / " + after.ucxMappings, "");
        Reliability.figure(name, "threads before/after", before.threads + " / " + after.threads, "");
        Reliability.figure(name, "VmRSS before/after", before.rssKiB + " / " + after.rssKiB, "KiB");
        Reliability.figure(name, "VmRSS growth", after.rssKiB - before.rssKiB, "KiB");
        Reliability.figure(name, "live heap before/after", before.heapKiB + " / " + after.heapKiB, "KiB");

        String added = child.value("NEWFDS");
        String mapped = child.value("NEWMAPS");
        String both = "\nbefore: " + before + "\nafter:  " + after + (added == null ? "" : "\nnew descriptors: " + added)
                + (mapped == null ? "" : "\nnew mappings: " + mapped);
        assertTrue("open file descriptors grew by more than " + FD_TOLERANCE + both,
                after.fds - before.fds <= FD_TOLERANCE);
        int otherMappings = (after.mappings - after.ucxMappings) - (before.mappings - before.ucxMappings);
        assertTrue("memory mappings (other than UCX's shared-memory segments) grew by more than " + MAPPING_TOLERANCE + both,
                otherMappings <= MAPPING_TOLERANCE);
        assertTrue("mappings of UCX's shared-memory segments grew by more than " + UCX_MAPPING_TOLERANCE + both,
                after.ucxMappings - before.ucxMappings <= UCX_MAPPING_TOLERANCE);
        assertTrue("threads grew by more than " + THREAD_TOLERANCE + both,
                after.threads - before.threads <= THREAD_TOLERANCE);
        assertTrue("live heap grew by more than " + HEAP_TOLERANCE_KIB + " KiB" + both,
                after.heapKiB - before.heapKiB <= HEAP_TOLERANCE_KIB);
        assertTrue("resident memory grew by more than " + RSS_TOLERANCE_KIB + " KiB" + both,
                after.rssKiB - before.rssKiB <= RSS_TOLERANCE_KIB);
    }
}
