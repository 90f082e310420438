package dev.hadronio.provider;

import static org.junit.Assert.assertFalse;
import static org.junit.Assert.assertTrue;

import dev.hadronio.HadronioProvider;
import java.io.IOException;
import java.io.InputStream;
import java.net.URISyntaxException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.Enumeration;
import java.util.List;
import java.util.jar.JarEntry;
import java.util.jar.JarFile;
import java.util.stream.Stream;
import org.junit.Test;

/**
 * The provider's first connection links no method handles on the application's thread: in a JVM
 * that just started, each {@code invokedynamic} site (a string concatenation, a lambda) and each
 * {@code VarHandle} access mode costs milliseconds the first time it runs. So no class of the
 * provider concatenates strings through {@code StringConcatFactory}, and the classes every
 * connection passes through use neither lambdas nor {@code VarHandle}s. Read from the compiled
 * classes themselves (their constant pools name what they link).
 */
public class StartupLinkageTest {
    /** Classes on every channel's path from open to the first bytes. */
    private static final String[] CONNECTION_PATH = {
        "dev/hadronio/nio/NativeHandle.class",
        "dev/hadronio/nio/HadronioSocketChannel.class",
        "dev/hadronio/nio/HadronioServerSocketChannel.class",
        "dev/hadronio/internal/Status.class",
        "dev/hadronio/internal/Native.class",
    };

    @Test
    public void noClassConcatenatesThroughInvokedynamic() throws Exception {
        List<String> found = new ArrayList<>();
        List<String> classes = providerClasses();
        assertTrue("the provider's classes were found: " + classes.size(), classes.size() > 20);
        for (String name : classes) {
            if (links(name, "java/lang/invoke/StringConcatFactory")) {
                found.add(name);
            }
        }
        assertTrue("classes that concatenate strings through invokedynamic (compile with -XDstringConcat=inline): " + found,
            found.isEmpty());
    }

    @Test
    public void theConnectionPathLinksNoLambdasOrVarHandles() throws Exception {
        for (String name : CONNECTION_PATH) {
            assertFalse(name + " creates lambdas", links(name, "java/lang/invoke/LambdaMetafactory"));
            assertFalse(name + " uses a VarHandle", links(name, "java/lang/invoke/VarHandle"));
        }
    }

    /** Whether the class file {@code name} mentions {@code what} (a class in its constant pool). */
    private static boolean links(String name, String what) throws IOException {
        byte[] bytes;
        try (InputStream in = HadronioProvider.class.getClassLoader().getResourceAsStream(name)) {
            assertTrue("class file " + name + " found", in != null);
            bytes = in.readAllBytes();
        }
        // Constant-pool strings are modified UTF-8; these names are ASCII.
        return new String(bytes, StandardCharsets.ISO_8859_1).contains(what);
    }

    /** Every class file of the provider (a directory of classes or the jar). */
    private static List<String> providerClasses() throws IOException, URISyntaxException {
        Path location = Paths.get(HadronioProvider.class.getProtectionDomain().getCodeSource().getLocation().toURI());
        List<String> names = new ArrayList<>();
        if (Files.isDirectory(location)) {
            try (Stream<Path> paths = Files.walk(location.resolve("dev/hadronio"))) {
                paths.filter(p -> p.toString().endsWith(".class"))
                    .forEach(p -> names.add(location.relativize(p).toString().replace('\\', '/')));
            }
        } else {
            try (JarFile jar = new JarFile(location.toFile())) {
                for (Enumeration<JarEntry> entries = jar.entries(); entries.hasMoreElements(); ) {
                    String name = entries.nextElement().getName();
                    if (name.startsWith("dev/hadronio/") && name.endsWith(".class")) {
                        names.add(name);
                    }
                }
            }
        }
        return names;
    }
}
