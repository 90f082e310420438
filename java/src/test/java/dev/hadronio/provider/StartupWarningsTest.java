package dev.hadronio.provider;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertTrue;

import java.io.File;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.Assume;
import org.junit.Test;

/**
 * JDK 24 and later warn about {@code sun.misc.Unsafe} and about native code loaded without native
 * access. A server and a client JVM started the way the README says
 * ({@code --enable-native-access=ALL-UNNAMED} and the provider property) exchange 8 MiB and print
 * no warning; without the flag the JDK's warning about {@code System::load} is there (so the check
 * sees warnings when they come). Runs on JDK 24 and later (the JDK 25 task); skipped before.
 */
public class StartupWarningsTest {
    private static Process start(List<String> flags, String... args) throws Exception {
        List<String> command = new ArrayList<>();
        command.add(System.getProperty("java.home") + File.separator + "bin" + File.separator + "java");
        command.addAll(flags);
        command.add("-Djava.nio.channels.spi.SelectorProvider=dev.hadronio.HadronioProvider");
        command.add("-cp");
        command.add(System.getProperty("java.class.path"));
        command.add(AuthProbe.class.getName());
        command.addAll(List.of(args));
        return new ProcessBuilder(command).redirectErrorStream(true).start();
    }

    /** Runs a sink server and an 8 MiB writer; returns both JVMs' whole output. */
    private static String exchange(List<String> flags) throws Exception {
        Process server = start(flags, "sink");
        Process client = null;
        StringBuilder output = new StringBuilder();
        try {
            java.io.BufferedReader lines = new java.io.BufferedReader(
                    new java.io.InputStreamReader(server.getInputStream(), StandardCharsets.UTF_8));
            String port = null;
            for (String line = lines.readLine(); line != null; line = lines.readLine()) {
                output.append("server: ").append(line).append('\n');
                if (line.startsWith("PORT ")) {
                    port = line.substring(5);
                    break;
                }
            }
            assertTrue("the server printed its port:\n" + output, port != null);
            client = start(flags, "writer", port);
            String clientOutput = new String(client.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
            assertTrue("the client finished", client.waitFor(60, TimeUnit.SECONDS));
            for (String line : clientOutput.split("\n")) {
                output.append("client: ").append(line).append('\n');
            }
            for (String line = lines.readLine(); line != null; line = lines.readLine()) {
                output.append("server: ").append(line).append('\n');
            }
            assertTrue("the server finished", server.waitFor(60, TimeUnit.SECONDS));
        } finally {
            server.destroyForcibly();
            if (client != null) {
                client.destroyForcibly();
            }
        }
        assertTrue("the exchange worked:\n" + output, output.toString().contains("SERVER read 8388608 end of stream"));
        return output.toString();
    }

    private static List<String> warnings(String output) {
        List<String> found = new ArrayList<>();
        for (String line : output.split("\n")) {
            if (line.contains("WARNING")) {
                found.add(line);
            }
        }
        return found;
    }

    @Test
    public void documentedFlagsStartWithoutWarnings() throws Exception {
        Assume.assumeTrue("JDK 24 or later", Runtime.version().feature() >= 24);
        String output = exchange(List.of("--enable-native-access=ALL-UNNAMED"));
        assertEquals("warnings with the README's flags:\n" + output, List.of(), warnings(output));
        String without = exchange(List.of());
        assertTrue("without --enable-native-access the JDK warns about System::load:\n" + without,
                warnings(without).stream().anyMatch(line -> line.contains("System::load")));
        assertTrue("and about nothing else of hadroNIO's:\n" + without,
                warnings(without).stream().noneMatch(line -> line.contains("Unsafe")));
    }
}
