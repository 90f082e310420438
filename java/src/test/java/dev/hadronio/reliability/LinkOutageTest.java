package dev.hadronio.reliability;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertNotNull;
import static org.junit.Assert.assertNull;
import static org.junit.Assert.assertTrue;

import dev.hadronio.reliability.Reliability.Mode;
import org.junit.Assume;
import org.junit.BeforeClass;
import org.junit.Rule;
import org.junit.Test;
import org.junit.rules.TestRule;

/**
 * Faults: the network link between two hosts goes down for {@link #OUTAGE_MILLIS} in the middle of
 * a transfer and comes back. The setup is {@link LinkDownTest}'s (two network namespaces joined by
 * a veth pair, {@link LinkPeer}, {@code UCX_TLS=tcp}), but with hadroNIO's default liveness bound
 * ({@code hadronio.livenessMillis}): the connection must survive, as the kernel's TCP does, and the
 * stream must go on once the link is back. The time from the link coming back to the reader's next
 * {@code MOVED} line is recorded as a figure.
 */
public class LinkOutageTest extends ProviderModeTest {
    static final long OUTAGE_MILLIS = 15_000;
    /** Bounds a stream that does not resume (TCP's retransmission backs off to several seconds). */
    static final long RESUME_BOUND_SECONDS = 40;
    static final int PORT = 7312;

    @Rule
    public final TestRule rules = resources.withTimeout(120);

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
                .jvm("-Xmx256m", "-XX:TieredStopAtLevel=1")
                .args(args)
                .start());
    }

    private static boolean ended(String text) {
        return text.startsWith("ERROR ") || text.equals("EOF");
    }

    @Test
    public void streamSurvivesAnOutage() throws Exception {
        String row = getClass().getSimpleName() + "[" + provider + "-" + mode + "]";
        String style = mode == Mode.BLOCKING ? "blocking" : "selector";
        VethPair pair = resources.add(VethPair.create("hnio-outage", "hnout"));
        ChildJvm server = start(pair, true, "server", "listen", VethPair.ADDRESS_A, PORT, "write", style);
        assertEquals("PORT " + PORT, "PORT " + server.awaitValue("PORT", 30));
        ChildJvm client = start(pair, false, "client", "connect", VethPair.ADDRESS_A, PORT, "read", style);
        String serverPath = server.awaitValue("STREAMING", 30);
        String clientPath = client.awaitValue("STREAMING", 30);
        if (provider == Reliability.Provider.HADRONIO) {
            assertTrue("the connection runs over UCX: " + serverPath + " / " + clientPath + "\n" + server.output()
                    + client.output(), serverPath.startsWith("ucx") && clientPath.startsWith("ucx"));
        }

        pair.setUp(true, false);
        Thread.sleep(OUTAGE_MILLIS);
        String during = "\n" + server.output() + client.output();
        assertNull("the server's stream survives the outage" + during, server.find(LinkOutageTest::ended));
        assertNull("the client's stream survives the outage" + during, client.find(LinkOutageTest::ended));
        long up = System.nanoTime();
        pair.setUp(true, true);

        ChildJvm.Line resumed = client.await(text -> text.startsWith("MOVED ") && client.lines().stream()
                .anyMatch(line -> line.text.equals(text) && line.nanos > up), RESUME_BOUND_SECONDS);
        assertNotNull("the stream resumes after the link came back\n" + server.output() + client.output(), resumed);
        Reliability.figure(row, "stream resumed after a " + OUTAGE_MILLIS / 1000 + " s outage",
                (resumed.nanos - up) / 1e6, "ms after the link came back");
        assertNull("no end on either side\n" + server.output() + client.output(),
                server.find(LinkOutageTest::ended) != null ? "server" : client.find(LinkOutageTest::ended));
    }
}
