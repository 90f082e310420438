package dev.hadronio.reliability;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertNotNull;
import static org.junit.Assert.assertTrue;
import static org.junit.Assert.fail;

import dev.hadronio.reliability.Reliability.Mode;
import org.junit.Assume;
import org.junit.BeforeClass;
import org.junit.Rule;
import org.junit.Test;
import org.junit.rules.TestRule;

/**
 * Faults: the network link between two hosts goes down in the middle of a transfer. The hosts
 * are two network namespaces joined by a veth pair ({@link VethPair}; needs root and iproute2,
 * skipped otherwise), with a server JVM in namespace A and a client JVM in namespace B
 * ({@link LinkPeer}, {@code UCX_TLS=tcp}). Once 8 MiB have moved (with hadroNIO: over UCX), the
 * veth end in A is set down; nothing is closed, no packet says goodbye. Both ends survive and must
 * see an {@code IOException} within {@link #DETECT_BOUND_MILLIS} with hadroNIO (its liveness
 * timers on the control connection, {@code hadronio.livenessMillis}, set to
 * {@link #LIVENESS_MILLIS} here; {@link LinkOutageTest} checks that the default survives an
 * outage); the JDK's provider is
 * measured for comparison only (its TCP retransmits for about a quarter of an hour and a reader
 * never notices), for {@link #JDK_WAIT_MILLIS}. Each end's detection time is recorded as a figure.
 *
 * <p>Then the server JVM is killed and at once started again on the same port, with the link still
 * down: it must bind, and, once the link is back up, serve a new client (with hadroNIO over TCP:
 * UCX chose its devices when the JVM started, while the link was down).
 *
 * <p>Rows: provider x mode. Blocking rows: the server (on the side whose link goes down) blocks
 * reading, the client blocks writing. Selector rows (both ends wait in {@code select()} without a
 * timeout): the server writes, the client reads.
 */
public class LinkDownTest extends ProviderModeTest {
    /** hadroNIO must report the dead link within this, measured from setting the link down. */
    static final long DETECT_BOUND_MILLIS = 8000;
    /** The liveness bound both JVMs run with here (the default is longer, to survive outages). */
    static final int LIVENESS_MILLIS = 4000;
    /** How long the JDK's provider is watched (it is not expected to notice). */
    static final long JDK_WAIT_MILLIS = 8000;
    static final int PORT = 7311;

    @Rule
    public final TestRule rules = resources.withTimeout(60);

    @BeforeClass
    public static void needNamespaces() {
        String why = VethPair.unavailable();
        Assume.assumeTrue("network namespaces unavailable: " + why, why == null);
    }

    private ChildJvm start(VethPair pair, boolean inA, String name, Object... args) throws Exception {
        return resources.add(new ChildJvm.Builder(name, LinkPeer.class).provider(provider)
                .prefix(pair.exec(inA))
                .env("UCX_TLS", "tcp")
                .env("HADRONIO_LOG", "info")
                .jvm("-Xmx256m", "-XX:TieredStopAtLevel=1", "-Dhadronio.livenessMillis=" + LIVENESS_MILLIS)
                .args(args)
                .start());
    }

    private static boolean ended(String text) {
        return text.startsWith("ERROR ") || text.equals("EOF");
    }

    @Test
    public void linkDownIsDetected() throws Exception {
        String row = getClass().getSimpleName() + "[" + provider + "-" + mode + "]";
        String style = mode == Mode.BLOCKING ? "blocking" : "selector";
        boolean serverWrites = mode == Mode.SELECTOR;
        String serverRole = serverWrites ? "write" : "read";
        String clientRole = serverWrites ? "read" : "write";

        VethPair pair = resources.add(VethPair.create("hnio-linkdown", "hnld"));
        ChildJvm server = start(pair, true, "server", "listen", VethPair.ADDRESS_A, PORT, serverRole, style);
        String port = server.awaitValue("PORT", 30);
        assertEquals(String.valueOf(PORT), port);
        ChildJvm client = start(pair, false, "client", "connect", VethPair.ADDRESS_A, PORT, clientRole, style);

        String serverPath = server.awaitValue("STREAMING", 30);
        String clientPath = client.awaitValue("STREAMING", 30);
        assertNotNull(client.output(), client.find(text -> text.equals("CONNECTED")));
        if (provider == Reliability.Provider.HADRONIO) {
            assertTrue("the server's connection runs over UCX: " + serverPath + "\n" + server.output(),
                    serverPath.startsWith("ucx"));
            assertTrue("the client's connection runs over UCX: " + clientPath + "\n" + client.output(),
                    clientPath.startsWith("ucx"));
        }
        assertTrue("no end before the link goes down\n" + server.output() + client.output(),
                server.find(LinkDownTest::ended) == null && client.find(LinkDownTest::ended) == null);

        long down = System.nanoTime();
        pair.setUp(true, false);
        long wait = provider == Reliability.Provider.HADRONIO ? DETECT_BOUND_MILLIS : JDK_WAIT_MILLIS;
        ChildJvm.Line serverEnd = server.await(LinkDownTest::ended, wait / 1000.0);
        long left = Math.max(0, wait - (System.nanoTime() - down) / 1_000_000);
        ChildJvm.Line clientEnd = client.await(LinkDownTest::ended, left / 1000.0);

        String serverName = "server (" + serverRole + "s, its link goes down)";
        String clientName = "client (" + clientRole + "s, far side)";
        report(row, serverName, serverEnd, down, wait);
        report(row, clientName, clientEnd, down, wait);
        if (provider == Reliability.Provider.HADRONIO) {
            check(serverName, server, serverEnd, down);
            check(clientName, client, clientEnd, down);
        }

        // A server restarted at once on the same port binds again and serves once the link is up.
        server.close();
        long restarted = System.nanoTime();
        ChildJvm again = start(pair, true, "restarted server", "listen", VethPair.ADDRESS_A, PORT, "write", "blocking");
        ChildJvm.Line bound = again.await(text -> text.startsWith("PORT ") || text.startsWith("BIND-FAILED "), 30);
        assertNotNull("the restarted server printed neither PORT nor BIND-FAILED\n" + again.output(), bound);
        Reliability.figure(row, "server restart to bound", (bound.nanos - restarted) / 1e6, "ms (" + bound + ")");
        assertEquals("the restarted server binds port " + PORT + " again\n" + again.output(), "PORT " + PORT,
                bound.text);
        pair.setUp(true, true);
        ChildJvm fresh = start(pair, false, "new client", "connect", VethPair.ADDRESS_A, PORT, "read", "blocking");
        String freshPath = fresh.awaitValue("STREAMING", 30);
        // UCX picks its network devices when the JVM starts: a server started while its link was
        // down serves hadroNIO clients over TCP (the fallback), which is what this records.
        Reliability.figure(row, "restarted server serves a new client over", freshPath, "");
    }

    private static void report(String row, String name, ChildJvm.Line end, long down, long wait) {
        if (end == null) {
            Reliability.figure(row, name + " detection after link down", "none within " + wait, "ms");
        } else {
            Reliability.figure(row, name + " detection after link down", (end.nanos - down) / 1e6, "ms (" + end + ")");
        }
    }

    private static void check(String name, ChildJvm peer, ChildJvm.Line end, long down) {
        if (end == null) {
            fail("the " + name + " saw no IOException within " + DETECT_BOUND_MILLIS + " ms of the link going down\n"
                    + peer.output());
        }
        assertTrue("the " + name + " sees an IOException, not end of stream: " + end + "\n" + peer.output(),
                end.text.startsWith("ERROR ") && end.text.contains("Exception"));
        double millis = (end.nanos - down) / 1e6;
        assertTrue("the " + name + " noticed the dead link after " + millis + " ms (bound " + DETECT_BOUND_MILLIS
                + " ms)", millis <= DETECT_BOUND_MILLIS);
    }
}
