package dev.hadronio.compat;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

/**
 * The exclusion list of the netty testsuite run ({@code java/src/compat/netty-excludes.txt}) and what it
 * matched, shared by {@link NettyExcludeFilter} and {@link NettySummaryListener} inside the JVM that runs
 * the JUnit console launcher.
 *
 * <p>File format: one entry per line, {@code ClassName} or {@code ClassName#methodName}, followed by a
 * mandatory {@code # reason}. A class name without a dot is relative to
 * {@code io.netty.testsuite.transport.socket}. Blank lines and lines starting with {@code #} are ignored.
 */
final class NettyExcludes {
    /** System property naming the exclusion file; without it nothing is excluded. */
    static final String FILE_PROPERTY = "compat.netty.excludes";

    private static final String DEFAULT_PACKAGE = "io.netty.testsuite.transport.socket.";

    private static volatile NettyExcludes instance;

    /** Entry (fully qualified, as written) → reason, in file order. */
    private final Map<String, String> reasons;
    /** Unique ids of excluded test descriptors → the entry that excluded them. */
    private final Map<String, String> excluded = new ConcurrentHashMap<>();

    private NettyExcludes(Map<String, String> reasons) {
        this.reasons = Collections.unmodifiableMap(reasons);
    }

    /** The list named by {@link #FILE_PROPERTY}, read once; an empty list when the property is unset. */
    static NettyExcludes get() {
        NettyExcludes result = instance;
        if (result == null) {
            synchronized (NettyExcludes.class) {
                result = instance;
                if (result == null) {
                    String file = System.getProperty(FILE_PROPERTY);
                    result = new NettyExcludes(file == null ? new LinkedHashMap<>() : parse(Paths.get(file)));
                    instance = result;
                }
            }
        }
        return result;
    }

    static Map<String, String> parse(Path file) {
        List<String> lines;
        try {
            lines = Files.readAllLines(file, StandardCharsets.UTF_8);
        } catch (IOException e) {
            throw new UncheckedIOException("cannot read the netty exclusion list " + file, e);
        }
        Map<String, String> result = new LinkedHashMap<>();
        for (int i = 0; i < lines.size(); i++) {
            String line = lines.get(i).trim();
            if (line.isEmpty() || line.startsWith("#")) {
                continue;
            }
            int hash = line.indexOf(" #");
            if (hash < 0 || line.substring(hash + 2).trim().isEmpty()) {
                throw new IllegalArgumentException(file + ":" + (i + 1) + ": entry without a '# reason': " + line);
            }
            String entry = line.substring(0, hash).trim();
            if (entry.isEmpty() || entry.contains(" ")) {
                throw new IllegalArgumentException(file + ":" + (i + 1) + ": malformed entry: " + line);
            }
            int sharp = entry.indexOf('#');
            String className = sharp < 0 ? entry : entry.substring(0, sharp);
            String qualified = className.indexOf('.') < 0 ? DEFAULT_PACKAGE + entry : entry;
            if (result.put(qualified, line.substring(hash + 2).trim()) != null) {
                throw new IllegalArgumentException(file + ":" + (i + 1) + ": duplicate entry " + entry);
            }
        }
        return result;
    }

    /**
     * The entry excluding the test method {@code className#methodName}, or {@code null}. Records the match
     * under {@code uniqueId} so that the excluded tests can be counted once each.
     */
    String match(String uniqueId, String className, String methodName) {
        String entry = null;
        if (methodName != null && reasons.containsKey(className + "#" + methodName)) {
            entry = className + "#" + methodName;
        } else if (reasons.containsKey(className)) {
            entry = className;
        }
        if (entry != null) {
            excluded.put(uniqueId, entry);
        }
        return entry;
    }

    String reason(String entry) {
        return reasons.get(entry);
    }

    boolean isEmpty() {
        return reasons.isEmpty();
    }

    /** Number of test methods (a parameterized method counts once) removed from the run. */
    int excludedCount() {
        return excluded.size();
    }

    /** One line per entry: how many test methods it excluded (0: a stale entry) and why. */
    List<String> report() {
        Map<String, Integer> counts = new LinkedHashMap<>();
        reasons.keySet().forEach(entry -> counts.put(entry, 0));
        excluded.values().forEach(entry -> counts.merge(entry, 1, Integer::sum));
        List<String> lines = new ArrayList<>();
        counts.forEach((entry, count) -> lines.add(String.format("excluded: %s (%d test method%s)  # %s%s",
                entry.startsWith(DEFAULT_PACKAGE) ? entry.substring(DEFAULT_PACKAGE.length()) : entry,
                count, count == 1 ? "" : "s", reasons.get(entry),
                count == 0 ? "  [WARNING: matches no test, remove the entry?]" : "")));
        return lines;
    }
}
