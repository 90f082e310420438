package dev.hadronio.provider;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertTrue;

import java.io.File;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.Test;

/**
 * Which transport a connection really uses, as UCX reports it: shared memory between two
 * channels on one host (the reason to use hadroNIO there), TCP when UCX is limited to it, and
 * plain kernel TCP when hadroNIO's upgrade is switched off.
 */
public class TransportTest {
    private static String probe(Map<String, String> environment, String... properties) throws Exception {
        List<String> command = new ArrayList<>();
        command.add(System.getProperty("java.home") + File.separator + "bin" + File.separator + "java");
        for (String property : properties) {
            command.add("-D" + property);
        }
        command.add("-cp");
        command.add(System.getProperty("java.class.path"));
        command.add(TransportProbe.class.getName());
        ProcessBuilder builder = new ProcessBuilder(command).redirectErrorStream(true);
        builder.environment().putAll(environment);
        Process process = builder.start();
        byte[] output = process.getInputStream().readAllBytes();
        assertTrue("probe finished", process.waitFor(60, TimeUnit.SECONDS));
        String text = new String(output, StandardCharsets.UTF_8);
        assertEquals("probe exit status; output:\n" + text, 0, process.exitValue());
        return text;
    }

    private static String line(String output, String prefix) {
        for (String line : output.split("\n")) {
            if (line.startsWith(prefix)) {
                return line;
            }
        }
        throw new AssertionError("no " + prefix + " line in:\n" + output);
    }

    @Test
    public void oneHostUsesSharedMemory() throws Exception {
        String output = probe(Map.of());
        for (String side : new String[] {"CLIENT ", "SERVER "}) {
            String path = line(output, side);
            assertTrue(path, path.startsWith(side + "ucx"));
            assertTrue("shared-memory lane expected: " + path, path.matches(".*lane\\[\\d+\\]:.*(posix|sysv|cma)/.*"));
        }
    }

    @Test
    public void ucxLimitedToTcpUsesTcp() throws Exception {
        String output = probe(Map.of("UCX_TLS", "tcp"));
        String path = line(output, "SERVER ");
        assertTrue(path, path.startsWith("SERVER ucx"));
        assertTrue("TCP lane expected: " + path, path.matches(".*lane\\[\\d+\\]:.*tcp/.*"));
        assertTrue("no shared memory: " + path, !path.matches(".*(posix|sysv|cma)/.*"));
    }

    @Test
    public void withoutUcxConnectionsStayOnTcpAndSayWhy() throws Exception {
        // UCX finds no transport, so its context fails. Made ahead of need at start, that is
        // known before the connection: neither side offers.
        String output = probe(Map.of("UCX_TLS", "no_such_transport"));
        for (String side : new String[] {"CLIENT ", "SERVER "}) {
            String path = line(output, side);
            assertTrue(path, path.startsWith(side + "tcp (UCX unavailable"));
        }
        // Without workers made ahead the context is first tried when a lane opens: the client
        // offered without waiting for it; the side whose lane could not open gives the upgrade
        // up and says why, the other says that its peer gave up.
        output = probe(Map.of("UCX_TLS", "no_such_transport"), "hadronio.spareWorkers=0");
        int why = 0;
        for (String side : new String[] {"CLIENT ", "SERVER "}) {
            String path = line(output, side).substring(side.length());
            boolean names = path.startsWith("tcp (UCX unavailable") || path.contains("ucp_init failed");
            assertTrue(output, names || path.equals("tcp (the peer gave up the upgrade)"));
            why += names ? 1 : 0;
        }
        assertTrue(output, why >= 1);
    }

    @Test
    public void upgradeSwitchedOffStaysOnKernelTcp() throws Exception {
        String output = probe(Map.of(), "hadronio.transport=tcp");
        assertTrue(output, line(output, "CLIENT ").contains("tcp (UCX disabled by hadronio.transport=tcp)"));
        assertTrue(output, line(output, "SERVER ").contains("tcp (UCX disabled by hadronio.transport=tcp)"));
    }
}
