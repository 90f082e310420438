package dev.hadronio.reliability;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertNull;
import static org.junit.Assert.assertTrue;
import static org.junit.Assert.fail;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.junit.Assume;
import org.junit.Rule;
import org.junit.Test;
import org.junit.rules.TestRule;
import org.junit.runner.RunWith;
import org.junit.runners.Parameterized;
import org.junit.runners.Parameterized.Parameter;
import org.junit.runners.Parameterized.Parameters;

/**
 * Data integrity between two JVMs: {@value #CONNECTIONS} connections, each carrying random data in both
 * directions at once, messages of 1 B .. 16 MiB written in blocking mode, read with random lengths,
 * every byte compared with what was sent and each direction's CRC32C compared between the two JVMs
 * (see {@link IntegrityPeer}). The total over all streams is 256 MiB, or
 * {@code -Dhadronio.reliability.integrityBytes=<bytes>} (4294967296 for the large run).
 *
 * <p>Rows: the JDK's provider (the oracle); hadroNIO with UCX's default transports (shared memory
 * between the two JVMs); hadroNIO with {@code UCX_TLS=tcp} in both JVMs' environment (UCX over TCP);
 * the same with UCX's rendezvous threshold raised to 1 MiB, so that bodies of large messages up to that
 * size arrive eagerly, often before their receive is posted. For hadroNIO every connection must have
 * been upgraded, over a shared-memory lane, or a TCP lane and no shared memory, respectively (its JVMs
 * set {@code hadronio.sharedUpgradeBytes=0}: small messages upgrade on shared workers too).
 *
 * <p>Containers, both providers: {@code netns}, the two JVMs in two network namespaces joined by a
 * veth pair (UCX's default transports; needs root and iproute2), and {@code ipc}, the client in IPC and
 * mount namespaces of its own with a private {@code /dev/shm} ({@code unshare}; needs root). There
 * shared memory does not reach the peer and UCX would only add its TCP transport to the kernel's, so
 * hadroNIO keeps every connection on TCP and says why.
 *
 * <p>Shared-memory layouts, hadroNIO: {@code slots-S-C}, the server with {@code hadronio.slotLength}
 * S KiB, the client with C KiB (the slot length sizes UCX's shared-memory segments, up to 64 KiB). A
 * sender writes into the receiver's segments as its own settings size them, and one with larger
 * segments wrote past the other's (that JVM crashed in UCX): with different sizes every connection
 * stays on TCP and says why; with 64 KiB on both sides (segments at UCX's 65,535-byte limit) they use
 * shared memory.
 *
 * <p>Each row records the bytes verified and the throughput (both directions, all connections, from
 * the first START to the last END) as figures.
 */
@RunWith(Parameterized.class)
public class IntegrityTest {
    static final int CONNECTIONS = 16;
    static final long TOTAL = Long.getLong("hadronio.reliability.integrityBytes", 256L << 20);
    /** Bounds a hang only: 60 s plus 10 MiB/s. */
    static final long TIMEOUT_SECONDS = 60 + TOTAL / (10 << 20);
    /** UCX's rendezvous threshold in the tcp-eager row: smaller messages and bodies go eagerly. */
    static final int EAGER_LIMIT = 1 << 20;

    @Parameters(name = "{0}-{1}")
    public static List<Object[]> parameters() {
        List<Object[]> rows = new ArrayList<>();
        rows.add(new Object[] {Reliability.Provider.JDK, "kernel"});
        rows.add(new Object[] {Reliability.Provider.HADRONIO, "shm"});
        rows.add(new Object[] {Reliability.Provider.HADRONIO, "tcp"});
        rows.add(new Object[] {Reliability.Provider.HADRONIO, "tcp-eager"});
        for (String layout : new String[] {"slots-64-16", "slots-16-32", "slots-64-64"}) {
            rows.add(new Object[] {Reliability.Provider.HADRONIO, layout});
        }
        for (String container : new String[] {"netns", "ipc"}) {
            for (Reliability.Provider provider : Reliability.Provider.values()) {
                rows.add(new Object[] {provider, container});
            }
        }
        return rows;
    }

    @Parameter(0)
    public Reliability.Provider provider;
    /**
     * {@code kernel} (JDK), {@code shm} (UCX defaults), {@code tcp} ({@code UCX_TLS=tcp}),
     * {@code tcp-eager} (also {@code UCX_RNDV_THRESH=1048576}), a container: {@code netns},
     * {@code ipc}, or slot lengths in KiB: {@code slots-<server>-<client>}.
     */
    @Parameter(1)
    public String transport;

    private final Resources resources = new Resources();

    @Rule
    public final TestRule rules = resources.withTimeout(TIMEOUT_SECONDS + 60);

    private boolean container() {
        return transport.equals("netns") || transport.equals("ipc");
    }

    /** The slot length in KiB of the server ({@code 1}) or client ({@code 2}) in a layout row. */
    private int slotKib(int side) {
        return Integer.parseInt(transport.split("-")[side]);
    }

    /** A layout row whose two JVMs lay their shared memory out differently. */
    private boolean layoutsDiffer() {
        return transport.startsWith("slots-") && slotKib(1) != slotKib(2);
    }

    /** {@code server}: the listening side (in namespace A of a veth pair, on the host otherwise). */
    private ChildJvm start(VethPair pair, boolean server, String name, Object... args) throws Exception {
        ChildJvm.Builder builder = new ChildJvm.Builder(name, IntegrityPeer.class).provider(provider)
                .jvm("-Xms512m", "-Xmx512m", "-XX:MaxDirectMemorySize=512m").args(args);
        if (provider == Reliability.Provider.HADRONIO) {
            // The 16 connections of a JVM share its blocking workers on a small host (4 on two
            // cores) and decide their path on one-byte round trips; this test is about the UCX
            // path, which they must all take.
            builder.jvm("-Dhadronio.sharedUpgradeBytes=0");
        }
        if (transport.startsWith("tcp")) {
            builder.env("UCX_TLS", "tcp");
        }
        if (transport.equals("tcp-eager")) {
            builder.env("UCX_RNDV_THRESH", String.valueOf(EAGER_LIMIT));
        }
        if (transport.startsWith("slots-")) {
            builder.jvm("-Dhadronio.slotLength=" + slotKib(server ? 1 : 2) * 1024);
        }
        if (pair != null) {
            builder.prefix(pair.exec(server));
        }
        if (transport.equals("ipc") && !server) {
            builder.prefix("unshare", "--ipc", "--mount", "--propagation", "private", "sh", "-c",
                    "mount -t tmpfs hadronio-shm /dev/shm && exec \"$@\"", "ipc-namespace");
        }
        return resources.add(builder.start());
    }

    /** {@code KEY <connection> <rest>} lines of a child, by connection. */
    private static Map<Integer, String[]> byConnection(ChildJvm child, String key) {
        Map<Integer, String[]> values = new HashMap<>();
        for (ChildJvm.Line line : child.all(key)) {
            String[] words = line.text.split(" ", 3);
            values.put(Integer.parseInt(words[1]), words[2].split(" "));
        }
        return values;
    }

    @Test
    public void everyByteArrivesIntact() throws Exception {
        VethPair pair = null;
        String host = "127.0.0.1";
        if (container()) {
            String why = VethPair.unavailable();
            Assume.assumeTrue("namespaces unavailable: " + why, why == null);
        }
        if (transport.equals("netns")) {
            pair = resources.add(VethPair.create("hnio-integrity", "hnit"));
            host = VethPair.ADDRESS_A;
        }
        ChildJvm server = start(pair, true, "server", "listen", host, 0, CONNECTIONS, TOTAL);
        int port = Integer.parseInt(server.awaitValue("PORT", 60));
        ChildJvm client = start(pair, false, "client", "connect", host, port, CONNECTIONS, TOTAL);
        for (ChildJvm child : new ChildJvm[] {server, client}) {
            ChildJvm.Line end = child.await(text -> text.startsWith("END ") || text.startsWith("FAILED"),
                    TIMEOUT_SECONDS);
            if (end == null || end.text.startsWith("FAILED")) {
                fail("the " + child.name() + " JVM did not finish its streams\n" + server.output() + client.output());
            }
        }
        for (ChildJvm child : new ChildJvm[] {server, client}) {
            child.send("EXIT");
        }
        for (ChildJvm child : new ChildJvm[] {server, client}) {
            assertEquals("exit status of the " + child.name() + " JVM\n" + child.output(), 0, child.awaitExit(60));
            assertNull("failure in the " + child.name() + " JVM\n" + child.output(),
                    child.find(text -> text.startsWith("FAILED")));
        }
        String both = "\n" + server.output() + client.output();

        long verified = 0;
        ChildJvm[][] directions = {{client, server}, {server, client}};
        for (ChildJvm[] direction : directions) {
            Map<Integer, String[]> sent = byConnection(direction[0], "SENT");
            Map<Integer, String[]> received = byConnection(direction[1], "RECEIVED");
            for (int connection = 0; connection < CONNECTIONS; connection++) {
                String what = direction[0].name() + " to " + direction[1].name() + ", connection " + connection;
                long expected = IntegrityPeer.streamBytes(TOTAL, CONNECTIONS, connection);
                String[] out = sent.get(connection);
                String[] in = received.get(connection);
                assertTrue(what + ": SENT and RECEIVED lines" + both, out != null && in != null);
                assertEquals(what + ": bytes sent", expected, Long.parseLong(out[0]));
                assertEquals(what + ": bytes received", expected, Long.parseLong(in[0]));
                assertEquals(what + ": first byte that differs from what was sent", -1L, Long.parseLong(in[2]));
                assertEquals(what + ": CRC32C sent vs received", out[1], in[1]);
                verified += Long.parseLong(in[0]);
            }
        }
        assertEquals("bytes verified", TOTAL, verified);

        if (provider == Reliability.Provider.HADRONIO) {
            for (ChildJvm child : new ChildJvm[] {server, client}) {
                Map<Integer, String[]> paths = byConnection(child, "PATH");
                assertEquals(child.name() + ": connections with a PATH line" + both, CONNECTIONS, paths.size());
                for (Map.Entry<Integer, String[]> entry : paths.entrySet()) {
                    String path = String.join(" ", entry.getValue());
                    String what = child.name() + ", connection " + entry.getKey() + ": " + path;
                    if (layoutsDiffer()) {
                        // The side that gives the upgrade up names why; the other says the peer did.
                        assertTrue("on TCP, for the layout: " + what,
                                path.startsWith("tcp (UCX's shared memory does not reach the peer (another namespace, or another hadronio.slotLength")
                                        || path.startsWith("tcp (the peer gave up the upgrade)"));
                        continue;
                    }
                    if (container()) {
                        assertTrue("on TCP, for a reason: " + what,
                                path.startsWith("tcp (") && !path.startsWith("tcp (not upgraded yet"));
                        if (entry.getKey() == 0) {
                            Reliability.figure(getClass().getSimpleName() + "[" + provider + "-" + transport + "]",
                                    child.name() + " path", path, "");
                        }
                        continue;
                    }
                    assertTrue("upgraded to UCX: " + what, path.startsWith("ucx"));
                    boolean sharedMemory = path.matches(".*lane\\[\\d+\\]:.*(posix|sysv|cma)/.*");
                    if (transport.equals("shm") || transport.startsWith("slots-")) {
                        assertTrue("a shared-memory lane: " + what, sharedMemory);
                    } else {
                        assertTrue("a TCP lane: " + what, path.matches(".*lane\\[\\d+\\]:.*tcp/.*"));
                        assertTrue("no shared memory with UCX_TLS=tcp: " + what, !sharedMemory);
                    }
                }
            }
        }

        long start = Math.min(Long.parseLong(server.awaitValue("START", 1)), Long.parseLong(client.awaitValue("START", 1)));
        long end = Math.max(Long.parseLong(server.awaitValue("END", 1)), Long.parseLong(client.awaitValue("END", 1)));
        double seconds = Math.max(1, end - start) / 1000.0;
        String name = getClass().getSimpleName() + "[" + provider + "-" + transport + "-" + (TOTAL >> 20) + "MiB]";
        Reliability.figure(name, "bytes verified", verified, "bytes (" + CONNECTIONS + " connections, both directions)");
        Reliability.figure(name, "throughput", verified / 1e6 / seconds, "MB/s (" + (end - start) + " ms)");
    }
}
