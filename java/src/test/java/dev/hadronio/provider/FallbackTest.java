package dev.hadronio.provider;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertNotEquals;
import static org.junit.Assert.assertTrue;

import dev.hadronio.reliability.ChildJvm;
import dev.hadronio.reliability.Reliability;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import org.junit.Assume;
import org.junit.Test;

/**
 * hadroNIO enabled JVM-wide but unable to start: the application still runs, on the JDK's own
 * channels, after one warning that names the cause and its fix; with {@code hadronio.required=true}
 * it fails at once with that message on top. Causes tried: an invalid setting (the native library
 * loads, JNI reaches the JDK's provider), a native directory without the library (no JNI: the JDK's
 * provider is reachable only with {@code --add-exports}), and a temporary directory mounted
 * {@code noexec} (in a private mount namespace).
 */
public class FallbackTest {
    private static ChildJvm probe(String name, List<String> prefix, String... jvm) throws Exception {
        return new ChildJvm.Builder(name, FallbackProbe.class)
                .prefix(prefix.toArray(new String[0]))
                .provider(Reliability.Provider.HADRONIO)
                .jvm(jvm)
                .start();
    }

    private static List<String> warnings(ChildJvm child) {
        List<String> found = new ArrayList<>();
        for (ChildJvm.Line line : child.lines()) {
            if (line.text.startsWith("WARNING")) {
                found.add(line.text);
            }
        }
        return found;
    }

    /** Runs the probe, which must work on the JDK's channels after exactly one warning; returns it. */
    private static String fallsBack(String name, List<String> prefix, String... jvm) throws Exception {
        try (ChildJvm child = probe(name, prefix, jvm)) {
            int status = child.awaitExit(60);
            String output = child.output();
            assertEquals("the application runs:\n" + output, 0, status);
            assertTrue(output, output.contains("OK"));
            assertEquals(output, "false", child.value("ACTIVE"));
            assertTrue("the channels are the JDK's:\n" + output, child.value("PROVIDER").startsWith("sun.nio.ch."));
            assertEquals(output, "tcp (the JDK's channel)", child.value("PATH"));
            List<String> warnings = warnings(child);
            assertEquals("one warning:\n" + output, 1, warnings.size());
            String warning = warnings.get(0);
            assertTrue(warning, warning.contains("hadroNIO is not in use"));
            assertTrue(warning, warning.contains("hadronio.required=true"));
            return warning;
        }
    }

    /** Runs the probe, which must fail before any channel work; returns its output. */
    private static String fails(String name, List<String> prefix, String... jvm) throws Exception {
        try (ChildJvm child = probe(name, prefix, jvm)) {
            int status = child.awaitExit(60);
            String output = child.output();
            assertNotEquals("the probe fails:\n" + output, 0, status);
            assertTrue("no channel was opened:\n" + output, !output.contains("PROVIDER"));
            return output;
        }
    }

    /**
     * The failure's first cause that carries a message: the JDK wraps what the provider's
     * constructor threw in exceptions without one ({@code ServiceConfigurationError},
     * {@code InvocationTargetException}).
     */
    private static String topCause(String output) {
        for (String line : output.split("\n")) {
            String rest = line.startsWith("FAILED ") ? line.substring(7)
                    : line.startsWith("Caused by: ") ? line.substring(11) : null;
            if (rest != null && rest.contains(": ")) {
                return rest;
            }
        }
        throw new AssertionError("no failure printed:\n" + output);
    }

    @Test
    public void aWorkingSetUpRunsHadronioWithoutWarnings() throws Exception {
        try (ChildJvm child = probe("working", List.of())) {
            int status = child.awaitExit(60);
            String output = child.output();
            assertEquals(output, 0, status);
            assertEquals(output, "true", child.value("ACTIVE"));
            assertEquals(output, "dev.hadronio.HadronioProvider", child.value("PROVIDER"));
            assertTrue(output, child.value("PATH").startsWith("ucx over shared memory ("));
            assertEquals(output, List.of(), warnings(child));
        }
    }

    @Test
    public void anInvalidSettingFallsBackWithAWarningNamingIt() throws Exception {
        String warning = fallsBack("invalid-setting", List.of(), "-Dhadronio.slots=lots");
        assertTrue(warning, warning.contains("hadronio.slots"));
        assertTrue(warning, warning.contains("lots"));
    }

    @Test
    public void anInvalidSettingFailsWhenRequired() throws Exception {
        String output = fails("invalid-setting-required", List.of(), "-Dhadronio.slots=lots", "-Dhadronio.required=true");
        String top = topCause(output);
        assertTrue(top, top.contains("hadroNIO cannot start (and hadronio.required=true)"));
        assertTrue(top, top.contains("hadronio.slots"));
    }

    @Test
    public void aMissingNativeLibraryFallsBackWhereTheJdkExportsItsProvider() throws Exception {
        Path empty = Files.createTempDirectory("hadronio-empty");
        try {
            String directory = "-Dhadronio.native.directory=" + empty;
            String warning = fallsBack("no-library", List.of(), directory, "--add-exports=java.base/sun.nio.ch=ALL-UNNAMED");
            assertTrue(warning, warning.contains("native library missing"));
            String output = fails("no-library-no-exports", List.of(), directory);
            String top = topCause(output);
            assertTrue(top, top.contains("hadroNIO cannot start: hadroNIO native library missing"));
            assertTrue(top, top.contains("--add-exports java.base/sun.nio.ch=ALL-UNNAMED"));
        } finally {
            Files.deleteIfExists(empty);
        }
    }

    @Test
    public void aNoexecTemporaryDirectoryIsNamedWithItsFix() throws Exception {
        // A mount namespace of its own needs root and util-linux's unshare.
        Process probe;
        try {
            probe = new ProcessBuilder("unshare", "--mount", "--propagation", "private", "true").redirectErrorStream(true).start();
        } catch (java.io.IOException e) {
            probe = null;
        }
        Assume.assumeTrue("unshare --mount is not available here (needs root)", probe != null && probe.waitFor() == 0);
        Path mount = Files.createTempDirectory("hadronio-noexec");
        try {
            // A private mount namespace: the tmpfs is seen by the child only, and goes with it.
            List<String> prefix = List.of("unshare", "--mount", "--propagation", "private", "sh", "-c",
                    "mount -t tmpfs -o noexec,size=64m tmpfs " + mount + " && exec \"$@\"", "sh");
            String warning = fallsBack("noexec", prefix, "-Djava.io.tmpdir=" + mount,
                    "--add-exports=java.base/sun.nio.ch=ALL-UNNAMED");
            assertTrue(warning, warning.contains("mounted noexec"));
            assertTrue(warning, warning.contains("java.io.tmpdir"));
        } finally {
            Files.deleteIfExists(mount);
        }
    }
}
