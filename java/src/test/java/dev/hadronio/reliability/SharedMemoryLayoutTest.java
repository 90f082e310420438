package dev.hadronio.reliability;

import static org.junit.Assert.assertTrue;

import org.junit.Rule;
import org.junit.Test;
import org.junit.rules.TestRule;

/**
 * Two processes whose UCX shared memory is laid out differently ({@code hadronio.slotLength}
 * sizes its segments, UCX's {@code UCX_MM_*} settings too) cannot use it between them: a sender
 * writes into the receiver's segments as its own settings size them, and with a larger segment
 * than the receiver's it wrote past them (the receiving JVM crashed in UCX). Such peers stay on
 * the kernel's TCP and every byte arrives; processes with the same non-default slot length use
 * shared memory. An echo server in one JVM, a client in another sends 8 MiB in 1 MiB writes and
 * compares the echo.
 */
public class SharedMemoryLayoutTest {
    private static final int MESSAGES = 8;

    private final Resources resources = new Resources();

    @Rule
    public final TestRule rules = resources.withTimeout(180);

    private String echo(String serverMode, String serverSlot, String clientSlot) throws Exception {
        ChildJvm.Builder serverBuilder = new ChildJvm.Builder("echo-server", EchoServerPeer.class).args(serverMode);
        if (serverSlot != null) {
            serverBuilder.jvm("-Dhadronio.slotLength=" + serverSlot);
        }
        ChildJvm server = resources.add(serverBuilder.start());
        int port = Integer.parseInt(server.awaitValue("PORT", 30));
        ChildJvm.Builder clientBuilder = new ChildJvm.Builder("large-echo-client", LargeEchoClient.class).args(port, MESSAGES);
        if (clientSlot != null) {
            clientBuilder.jvm("-Dhadronio.slotLength=" + clientSlot);
        }
        ChildJvm client = resources.add(clientBuilder.start());
        ChildJvm.Line done = client.await(text -> text.startsWith("DONE ") || text.startsWith("FAILED "), 120);
        assertTrue("client output:\n" + client.output() + "\nserver output:\n" + server.output(),
                done != null && done.text.startsWith("DONE " + (long) MESSAGES * LargeEchoClient.MESSAGE + " "));
        assertTrue("server output:\n" + server.output(), server.find(text -> text.startsWith("SERVER-DIED")) == null);
        return done.text;
    }

    /** The side that gives up the upgrade names why; the other says the peer gave it up. */
    private static void assertPlain(String done) {
        assertTrue(done, done.contains(" tcp (UCX's shared memory does not reach the peer (another namespace, or another hadronio.slotLength")
                || done.contains(" tcp (the peer gave up the upgrade)"));
    }

    @Test
    public void largerSegmentsThanThePeersStayOnTcp() throws Exception {
        assertPlain(echo("selector", "65536", null));
    }

    @Test
    public void smallerSegmentsThanThePeersStayOnTcp() throws Exception {
        assertPlain(echo("blocking", null, "32768"));
    }

    @Test
    public void equalSlotsOf64KiBUseSharedMemory() throws Exception {
        String done = echo("selector", "65536", "65536");
        assertTrue(done, done.contains(" ucx over shared memory"));
    }
}
