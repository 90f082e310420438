package dev.hadronio.provider;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertTrue;

import java.io.File;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.Test;

/**
 * {@code java -jar hadronio-<version>.jar} as a user runs it: on this machine every check passes and
 * the loopback connection between two hadroNIO JVMs goes over shared memory; with the native
 * library missing it exits with status 1 and names the cause.
 */
public class DoctorTest {
    private static String[] runJar(String... properties) throws Exception {
        File libs = new File(System.getProperty("hadronio.test.libs"));
        File jar = null;
        for (File file : libs.listFiles()) {
            if (file.getName().matches("hadronio-[^-]+\\.jar")) {
                jar = file;
            }
        }
        assertTrue("the jar in " + libs, jar != null);
        List<String> command = new ArrayList<>();
        command.add(System.getProperty("java.home") + File.separator + "bin" + File.separator + "java");
        command.addAll(List.of(properties));
        command.add("-jar");
        command.add(jar.getPath());
        Process process = new ProcessBuilder(command).redirectErrorStream(true).start();
        String output = new String(process.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertTrue("the doctor finished:\n" + output, process.waitFor(120, TimeUnit.SECONDS));
        return new String[] {String.valueOf(process.exitValue()), output};
    }

    @Test
    public void everyCheckPassesHere() throws Exception {
        String[] result = runJar();
        String output = result[1];
        assertEquals(output, "0", result[0]);
        assertTrue(output, output.contains("all checks passed"));
        assertTrue(output, output.contains("UCX 1."));
        assertTrue(output, output.matches("(?s).*hadroNIO\\s+\\d+\\.\\d us\\s+ucx over shared memory.*"));
        assertTrue(output, output.matches("(?s).*JDK\\s+\\d+\\.\\d us\\s+tcp \\(the JDK's channel\\).*"));
    }

    @Test
    public void aMissingLibraryIsNamedAndFails() throws Exception {
        String[] result = runJar("-Dhadronio.native.directory=/nonexistent-hadronio");
        String output = result[1];
        assertEquals(output, "1", result[0]);
        assertTrue(output, output.contains("native library missing: /nonexistent-hadronio/"));
        assertTrue(output, output.contains("1 problem"));
    }
}
