package dev.hadronio.provider;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertTrue;

import java.io.BufferedReader;
import java.io.File;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.Test;

/**
 * The shared secret ({@code hadronio.secret}) authenticates both ends of the upgrade: equal
 * secrets upgrade to UCX; a differing or missing secret is refused with a clear error before any
 * UCX endpoint exists, and the bytes of a peer that failed never reach the application.
 */
public class AuthTest {
    private static Process start(String secret, String... args) throws Exception {
        List<String> command = new ArrayList<>();
        command.add(System.getProperty("java.home") + File.separator + "bin" + File.separator + "java");
        command.add("-Djava.nio.channels.spi.SelectorProvider=dev.hadronio.HadronioProvider");
        if (secret != null) {
            command.add("-Dhadronio.secret=" + secret);
        }
        command.add("-cp");
        command.add(System.getProperty("java.class.path"));
        command.add(AuthProbe.class.getName());
        for (String arg : args) {
            command.add(arg);
        }
        ProcessBuilder builder = new ProcessBuilder(command).redirectErrorStream(true);
        builder.environment().remove("HADRONIO_SECRET");
        return builder.start();
    }

    /** Runs server and client; returns their result lines ("SERVER ...", "CLIENT ..."). */
    private static String[] exchange(String serverSecret, String clientSecret) throws Exception {
        return exchange(serverSecret, clientSecret, "server", "client");
    }

    private static String[] exchange(String serverSecret, String clientSecret, String serverMode, String clientMode)
            throws Exception {
        Process server = start(serverSecret, serverMode);
        Process client = null;
        try {
            BufferedReader serverOut = new BufferedReader(new InputStreamReader(server.getInputStream(), StandardCharsets.UTF_8));
            String port = null;
            String line;
            while ((line = serverOut.readLine()) != null) {
                if (line.startsWith("PORT ")) {
                    port = line.substring(5);
                    break;
                }
            }
            assertTrue("server reported its port", port != null);
            client = start(clientSecret, clientMode, port);
            String clientOutput = new String(client.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
            assertTrue("client finished", client.waitFor(60, TimeUnit.SECONDS));
            StringBuilder rest = new StringBuilder();
            while ((line = serverOut.readLine()) != null) {
                rest.append(line).append('\n');
            }
            assertTrue("server finished", server.waitFor(60, TimeUnit.SECONDS));
            return new String[] {find(rest.toString(), "SERVER "), find(clientOutput, "CLIENT ")};
        } finally {
            server.destroyForcibly();
            if (client != null) {
                client.destroyForcibly();
            }
        }
    }

    private static String find(String output, String prefix) {
        for (String line : output.split("\n")) {
            if (line.startsWith(prefix)) {
                return line;
            }
        }
        throw new AssertionError("no " + prefix + "line in:\n" + output);
    }

    @Test
    public void equalSecretsUpgrade() throws Exception {
        String[] result = exchange("correct horse", "correct horse");
        assertTrue(result[0], result[0].startsWith("SERVER echoed ") && result[0].contains(" path ucx over shared memory"));
        assertTrue(result[1], result[1].startsWith("CLIENT read -1 path ucx over shared memory"));
    }

    @Test
    public void differingSecretIsRefused() throws Exception {
        String[] result = exchange("correct horse", "battery staple");
        assertTrue(result[0], result[0].contains("authentication failed: the peer's shared secret differs"));
        assertTrue(result[1], result[1].startsWith("CLIENT error "));
    }

    /**
     * A client with another secret that writes 8 MiB at once, before any answer came: the server
     * application reads none of it, and both ends fail with the authentication error.
     */
    @Test
    public void failedAuthenticationDeliversNothing() throws Exception {
        String[] result = exchange("correct horse", "battery staple", "sink", "writer");
        assertTrue(result[0], result[0].startsWith("SERVER read 0 error ")
                && result[0].contains("authentication failed: the peer's shared secret differs"));
        assertTrue(result[1], result[1].contains(" error ") && result[1].contains("authentication failed"));
    }

    /**
     * A client without a secret that writes 8 MiB at once to a server that requires one: the
     * server's answer says so, and both ends fail with an error that names the secret (not a
     * reset, not the server's authentication wait running out). Six times, as it once depended on
     * which end looked first.
     */
    @Test
    public void missingSecretFailsBothEndsWhenTheClientWritesMuch() throws Exception {
        for (int round = 0; round < 6; round++) {
            String[] result = exchange("correct horse", null, "sink", "writer");
            assertTrue(round + ": " + result[0], result[0].startsWith("SERVER read 0 error ")
                    && result[0].contains("the peer has no shared secret"));
            assertTrue(round + ": " + result[1], result[1].contains(" error ")
                    && result[1].contains("the peer requires a shared secret"));
        }
    }

    /**
     * A client without a secret that exchanges small messages with a server that requires one:
     * both ends name the secret, whether the client's end reaches the server as its end of stream
     * or as a reset (six runs).
     */
    @Test
    public void missingSecretIsRefusedOnBothSides() throws Exception {
        for (int round = 0; round < 6; round++) {
            String[] result = exchange("correct horse", null);
            assertTrue(round + ": " + result[0], result[0].contains("the peer has no shared secret"));
            assertTrue(round + ": " + result[1], result[1].contains("the peer requires a shared secret"));
        }
    }
}
