package dev.hadronio.reliability;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertTrue;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.List;
import org.junit.Rule;
import org.junit.Test;
import org.junit.rules.TestRule;
import org.junit.runner.RunWith;
import org.junit.runners.Parameterized;
import org.junit.runners.Parameterized.Parameter;
import org.junit.runners.Parameterized.Parameters;

/**
 * A selector server whose clients are killed again and again must not grow. The server is an echo
 * server in a child JVM ({@link EchoServerPeer}, selector); each client is a JVM that connects,
 * streams (with hadroNIO over UCX) without reading the echo, and is killed with SIGKILL. The server
 * must see every connection end (a client that never reads leaves the server waiting to write, so
 * only the kill can end it), and after a warm-up of {@link #WARM_UP} kills its resident memory may
 * grow by at most {@link #RSS_BOUND_MIB} MiB and its file descriptors by at most
 * {@link #FD_BOUND} over {@link #KILLS} more ({@code -Dhadronio.reliability.kills}, default 100).
 */
@RunWith(Parameterized.class)
public class KilledClientsTest {
    static final int WARM_UP = 30;
    static final int KILLS = Integer.getInteger("hadronio.reliability.kills", 100);
    /**
     * Resident size moves by several MiB between runs as the C allocator's arenas fill (7 to 16 MiB
     * over 100 kills, 8 MiB over 250); a leak of a worker per connection (MiBs each) shows far above
     * this, and in the descriptor count too.
     */
    static final long RSS_BOUND_MIB = 24;
    static final int FD_BOUND = 16;
    static final long SETTLE_STILL_S = 25;

    @Parameters(name = "{0}")
    public static List<Object[]> parameters() {
        List<Object[]> rows = new ArrayList<>();
        for (Reliability.Provider provider : Reliability.Provider.values()) {
            rows.add(new Object[] {provider});
        }
        return rows;
    }

    @Parameter(0)
    public Reliability.Provider provider;

    private final Resources resources = new Resources();

    @Rule
    public final TestRule rules = resources.withTimeout(240 + 3L * (WARM_UP + KILLS));

    @Test
    public void serverStaysFlat() throws Exception {
        String row = getClass().getSimpleName() + "[" + provider + "]";
        ChildJvm server = resources.add(new ChildJvm.Builder("server", EchoServerPeer.class).provider(provider)
                .jvm("-Xms96m", "-Xmx96m", "-XX:+AlwaysPreTouch", "-XX:TieredStopAtLevel=1",
                        // The server's 64 KiB buffer per connection is direct memory, freed only
                        // by a GC, which a pre-touched heap rarely needs: bound it, so that the
                        // JVM collects them (with either provider) and RSS shows what stays.
                        "-XX:MaxDirectMemorySize=4m").args("selector").start());
        String port = server.awaitValue("PORT", 30);
        long pid = server.pid();
        long[] before = null;
        for (int kill = 1; kill <= WARM_UP + KILLS; kill++) {
            ChildJvm client = new ChildJvm.Builder("client", StreamPeer.class).provider(provider)
                    .jvm("-Xmx64m", "-XX:TieredStopAtLevel=1").args("connect", "127.0.0.1", port, "write").start();
            try {
                client.awaitValue("CONNECTED", 30);
                // Long enough for the upgrade and for the echo to fill up.
                Thread.sleep(300);
            } finally {
                client.close();
            }
            int ended = kill;
            assertTrue("the server sees the end of connection " + kill + " (a killed client)\n" + server.output(),
                    server.await(text -> server.all("CLOSED").size() >= ended, 30) != null);
            if (kill == WARM_UP) {
                before = settled(pid);
            }
            if (kill % 25 == 0) {
                long[] now = usage(pid);
                System.out.println(row + ": " + kill + " kills, RSS " + (now[0] >> 10) + " MiB, " + now[1] + " fds");
            }
        }
        long[] after = settled(pid);
        double grown = (after[0] - before[0]) / 1024.0;
        Reliability.figure(row, "RSS growth over " + KILLS + " kills after " + WARM_UP, grown,
                "MiB (" + (before[0] >> 10) + " to " + (after[0] >> 10) + " MiB)");
        Reliability.figure(row, "fd growth over " + KILLS + " kills after " + WARM_UP, after[1] - before[1],
                "(" + before[1] + " to " + after[1] + ")");
        assertEquals("every connection ended with an error or end of stream on the server", WARM_UP + KILLS,
                server.all("CLOSED").size());
        assertTrue("resident memory grew by " + grown + " MiB (bound " + RSS_BOUND_MIB + ")", grown <= RSS_BOUND_MIB);
        assertTrue("file descriptors grew by " + (after[1] - before[1]) + " (bound " + FD_BOUND + ")",
                after[1] - before[1] <= FD_BOUND);
    }

    /**
     * {@link #usage} once the server has let go of what the last kills left behind. The UCX
     * resources of a killed peer go in steps: a connection's link waits up to 5 s for UCX to let
     * go of it, and the worker that served the dead process (with its endpoints) goes once the
     * last of its connections has; between steps the count stands still.
     * So the figures are taken once the descriptor count has not fallen for
     * {@link #SETTLE_STILL_S} s (at least 7 s after the last kill, at most 90 s).
     */
    private static long[] settled(long pid) throws IOException, InterruptedException {
        long start = System.nanoTime();
        long end = start + 90_000_000_000L;
        long[] last = usage(pid);
        long stableSince = start;
        while (System.nanoTime() < end && (System.nanoTime() - start < 7_000_000_000L
                || System.nanoTime() - stableSince < SETTLE_STILL_S * 1_000_000_000L)) {
            Thread.sleep(250);
            long[] now = usage(pid);
            if (now[1] < last[1]) {
                stableSince = System.nanoTime();
            }
            last = now;
        }
        return last;
    }

    /** {@code [VmRSS in KiB, open file descriptors]} of a process. */
    private static long[] usage(long pid) throws IOException {
        long rss = -1;
        for (String line : Files.readAllLines(Paths.get("/proc", String.valueOf(pid), "status"), StandardCharsets.UTF_8)) {
            if (line.startsWith("VmRSS:")) {
                rss = Long.parseLong(line.replaceAll("[^0-9]", ""));
            }
        }
        long fds;
        try (java.util.stream.Stream<Path> list = Files.list(Paths.get("/proc", String.valueOf(pid), "fd"))) {
            fds = list.count();
        }
        return new long[] {rss, fds};
    }
}
