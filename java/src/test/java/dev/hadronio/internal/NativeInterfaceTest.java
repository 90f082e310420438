package dev.hadronio.internal;

import static org.junit.Assert.assertArrayEquals;
import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertFalse;
import static org.junit.Assert.assertTrue;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.Map;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.BeforeClass;
import org.junit.Test;

/**
 * The native interface agrees on all three sides: the C header cbindgen generates from the Rust
 * exports, the header {@code javac -h} generates from {@link Native}, and the symbols the built
 * library exports; and the status codes shared with Rust are the same.
 */
public class NativeInterfaceTest {
    private static final Pattern FUNCTION = Pattern.compile("(?:JNIEXPORT\\s+)?(\\w+)\\s+(?:JNICALL\\s+)?(Java_\\w+)\\s*\\(([^)]*)\\)\\s*;");

    @BeforeClass
    public static void load() {
        NativeLoader.load();
    }

    /** Function name → return type and parameter types, parameter names dropped. */
    private static Map<String, String> functions(Path header) throws IOException {
        String text = new String(Files.readAllBytes(header), StandardCharsets.UTF_8).replaceAll("/\\*.*?\\*/", " ");
        Map<String, String> functions = new TreeMap<>();
        Matcher matcher = FUNCTION.matcher(text);
        while (matcher.find()) {
            StringBuilder signature = new StringBuilder(matcher.group(1)).append('(');
            for (String parameter : matcher.group(3).split(",")) {
                String type = parameter.trim().replaceAll("\\s*\\*\\s*", " * ").replaceAll("\\s+", " ");
                // cbindgen names parameters, javac -h does not: keep the type words only.
                String[] words = type.split(" ");
                if (words.length > 1 && !words[words.length - 1].equals("*") && !type.startsWith("JNIEnv")) {
                    type = String.join(" ", java.util.Arrays.copyOf(words, words.length - 1));
                } else if (type.startsWith("JNIEnv")) {
                    type = "JNIEnv *";
                }
                signature.append(type.trim()).append(';');
            }
            functions.put(matcher.group(2), signature.append(')').toString());
        }
        return functions;
    }

    @Test
    public void generatedHeadersAndExportedSymbolsAgree() throws Exception {
        Map<String, String> javac = functions(Paths.get(System.getProperty("hadronio.test.jniHeader")));
        Map<String, String> cbindgen = functions(Paths.get(System.getProperty("hadronio.test.cbindgenHeader")));
        assertFalse("javac -h produced no functions", javac.isEmpty());
        assertEquals("functions in cbindgen's header vs javac -h", javac.keySet(), cbindgen.keySet());
        for (Map.Entry<String, String> entry : javac.entrySet()) {
            assertEquals("signature of " + entry.getKey(), entry.getValue(), cbindgen.get(entry.getKey()));
        }

        Path library = Paths.get(System.getProperty("hadronio.test.nativeResources"), "libhadronio.so");
        Process nm = new ProcessBuilder("nm", "-D", "--defined-only", library.toString()).redirectErrorStream(true).start();
        String symbols = new String(nm.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertEquals("nm -D failed: " + symbols, 0, nm.waitFor());
        TreeSet<String> exported = new TreeSet<>();
        Matcher matcher = Pattern.compile("\\sT\\s+(Java_\\w+)").matcher(symbols);
        while (matcher.find()) {
            exported.add(matcher.group(1));
        }
        assertEquals("Java_* symbols exported by libhadronio.so vs javac -h", javac.keySet(), exported);
        assertTrue("JNI_OnLoad is exported", symbols.contains(" T JNI_OnLoad"));
    }

    @Test
    public void statusCodesMatchTheNativeOnes() {
        assertArrayEquals(Status.NAMES, Native.statusNames());
    }

    @Test
    public void versionNamesTheLoadedUcx() {
        String version = Native.version();
        assertTrue(version, version.contains("UCX 1."));
        assertTrue(version, version.contains("available"));
    }
}
