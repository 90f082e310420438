package dev.hadronio.internal;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertFalse;
import static org.junit.Assert.assertNotNull;
import static org.junit.Assert.assertTrue;

import java.io.File;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.List;
import java.util.jar.JarFile;
import java.util.jar.Manifest;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Collectors;
import java.util.stream.Stream;
import org.junit.Test;

/**
 * What the jar carries, read with the tools a user would use ({@code readelf}): every bundled native
 * library stripped of debug information, no RUNPATH or RPATH outside the library's own directory
 * (a path into the build machine would be searched first wherever the jar runs), and the newest glibc
 * symbol version they need equal to the one the README and {@link NativeLoader} state; the license,
 * the third-party notices (the same as the repository's copy), the module name, and the sources and
 * javadoc jars next to it.
 */
public class ArtifactTest {
    private static Path natives() {
        return Paths.get(System.getProperty("hadronio.test.nativeResources"));
    }

    private static List<Path> libraries() throws IOException {
        try (Stream<Path> files = Files.walk(natives())) {
            List<Path> found = files.filter(p -> p.getFileName().toString().contains(".so")).sorted().collect(Collectors.toList());
            assertTrue("libhadronio.so and the UCX libraries: " + found, found.size() >= 5);
            return found;
        }
    }

    private static String readelf(String option, Path library) throws Exception {
        Process process = new ProcessBuilder("readelf", option, "-W", library.toString()).redirectErrorStream(true).start();
        String output = new String(process.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertEquals("readelf " + option + " " + library + ":\n" + output, 0, process.waitFor());
        return output;
    }

    @Test
    public void bundledLibrariesSearchOnlyTheirOwnDirectory() throws Exception {
        Pattern path = Pattern.compile("\\((?:RUNPATH|RPATH)\\)\\s+Library r(?:un)?path: \\[(.*)\\]");
        for (Path library : libraries()) {
            Matcher matcher = path.matcher(readelf("-d", library));
            while (matcher.find()) {
                for (String entry : matcher.group(1).split(":")) {
                    assertTrue(library + " searches " + entry, entry.equals("$ORIGIN") || entry.startsWith("$ORIGIN/"));
                }
            }
        }
    }

    @Test
    public void bundledLibrariesCarryNoDebugInformation() throws Exception {
        for (Path library : libraries()) {
            assertFalse(library + " has debug sections", readelf("-S", library).contains(".debug_info"));
        }
    }

    @Test
    public void theStatedGlibcIsTheNewestOneNeeded() throws Exception {
        Pattern version = Pattern.compile("Name: GLIBC_(\\d+)\\.(\\d+)");
        int[] newest = {0, 0};
        for (Path library : libraries()) {
            Matcher matcher = version.matcher(readelf("-V", library));
            while (matcher.find()) {
                int major = Integer.parseInt(matcher.group(1));
                int minor = Integer.parseInt(matcher.group(2));
                if (major > newest[0] || (major == newest[0] && minor > newest[1])) {
                    newest = new int[] {major, minor};
                }
            }
        }
        assertEquals("the newest GLIBC_ version the bundled libraries need", NativeLoader.GLIBC, newest[0] + "." + newest[1]);
        String readme = new String(Files.readAllBytes(Paths.get(System.getProperty("hadronio.test.repository"), "README.md")),
                StandardCharsets.UTF_8);
        assertTrue("the README states glibc " + NativeLoader.GLIBC, readme.contains("glibc " + NativeLoader.GLIBC));
    }

    @Test
    public void noticesMatchTheRepositoryCopy() throws Exception {
        String inJar;
        try (InputStream in = ArtifactTest.class.getResourceAsStream("/META-INF/THIRD-PARTY-NOTICES.txt")) {
            assertNotNull("META-INF/THIRD-PARTY-NOTICES.txt", in);
            inJar = new String(in.readAllBytes(), StandardCharsets.UTF_8);
        }
        assertTrue(inJar, inJar.contains("UCX") && inJar.contains("BSD") && inJar.contains("jni v"));
        Path copy = Paths.get(System.getProperty("hadronio.test.repository"), "docs", "THIRD-PARTY-NOTICES.txt");
        assertEquals("docs/THIRD-PARTY-NOTICES.txt is the generated file (refresh it with: unzip -p"
                + " java/build/libs/hadronio-*.jar META-INF/THIRD-PARTY-NOTICES.txt > docs/THIRD-PARTY-NOTICES.txt)",
                inJar, new String(Files.readAllBytes(copy), StandardCharsets.UTF_8));
    }

    @Test
    public void theJarNamesItsModuleAndComesWithLicenseSourcesAndJavadoc() throws Exception {
        File libs = new File(System.getProperty("hadronio.test.libs"));
        List<String> names = new ArrayList<>();
        for (File file : libs.listFiles()) {
            names.add(file.getName());
        }
        String version = names.stream().filter(n -> n.matches("hadronio-[^-]+\\.jar")).findFirst()
                .orElseThrow(() -> new AssertionError("no jar in " + names)).replaceAll("hadronio-(.*)\\.jar", "$1");
        assertTrue(names.toString(), names.contains("hadronio-" + version + "-sources.jar"));
        assertTrue(names.toString(), names.contains("hadronio-" + version + "-javadoc.jar"));
        try (JarFile jar = new JarFile(new File(libs, "hadronio-" + version + ".jar"))) {
            Manifest manifest = jar.getManifest();
            assertEquals("dev.hadronio", manifest.getMainAttributes().getValue("Automatic-Module-Name"));
            assertEquals("ALL-UNNAMED", manifest.getMainAttributes().getValue("Enable-Native-Access"));
            assertNotNull(jar.getEntry("META-INF/LICENSE"));
            assertNotNull(jar.getEntry("META-INF/THIRD-PARTY-NOTICES.txt"));
        }
        try (JarFile sources = new JarFile(new File(libs, "hadronio-" + version + "-sources.jar"))) {
            assertNotNull(sources.getEntry("dev/hadronio/HadronioProvider.java"));
        }
        try (JarFile javadoc = new JarFile(new File(libs, "hadronio-" + version + "-javadoc.jar"))) {
            assertNotNull(javadoc.getEntry("dev/hadronio/HadronioProvider.html"));
        }
    }
}
