package dev.hadronio.reliability;

import java.io.IOException;
import java.lang.management.ManagementFactory;
import java.lang.management.MemoryUsage;
import java.nio.charset.StandardCharsets;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.TreeMap;

/**
 * What this process holds, as the kernel and the JVM see it: open file descriptors (entries of
 * {@code /proc/self/fd}), memory mappings (lines of {@code /proc/self/maps}: shared-memory segments of
 * UCX peers show up here), resident memory ({@code VmRSS} of {@code /proc/self/status}), threads
 * ({@code Threads}, native ones included) and the Java heap in use. {@link #measure(boolean)} with
 * {@code gc} first runs {@link System#gc()} twice, so that the heap figure is the live set (exact with
 * the serial collector that the measuring child JVMs use) and unreachable channels have been collected.
 *
 * <p>{@link #encode()} and {@link #parse(String)} carry a snapshot from a child JVM to the test in one
 * line: {@code fds=12 maps=410 ucxMaps=24 rssKiB=180224 heapKiB=1830 threads=17} ({@code ucxMaps}: the
 * mappings of UCX shared-memory segments, counted among {@code maps} too).
 */
public final class Footprint {
    /** What the paths of UCX's shared-memory segments contain ({@code /dev/shm/ucx_shm_posix_...}). */
    static final String UCX_SEGMENT = "/ucx_shm_";

    public final int fds;
    public final int mappings;
    /** Mappings of UCX shared-memory segments (a worker's own, and its peers' that its endpoints reach). */
    public final int ucxMappings;
    public final long rssKiB;
    public final long heapKiB;
    public final int threads;

    private Footprint(int fds, int mappings, int ucxMappings, long rssKiB, long heapKiB, int threads) {
        this.fds = fds;
        this.mappings = mappings;
        this.ucxMappings = ucxMappings;
        this.rssKiB = rssKiB;
        this.heapKiB = heapKiB;
        this.threads = threads;
    }

    /** A snapshot of this process; {@code gc}: collect garbage first. */
    public static Footprint measure(boolean gc) {
        if (gc) {
            System.gc();
            System.gc();
        }
        MemoryUsage heap = ManagementFactory.getMemoryMXBean().getHeapMemoryUsage();
        Map<String, Long> status = status();
        List<String> maps = maps();
        int ucx = (int) maps.stream().filter(line -> line.contains(UCX_SEGMENT)).count();
        return new Footprint(openFileDescriptors(), maps.size(), ucx, status.getOrDefault("VmRSS", -1L), heap.getUsed() / 1024,
                status.getOrDefault("Threads", -1L).intValue());
    }

    /** Resident memory now, in KiB ({@code VmRSS}); cheap enough to sample every few milliseconds. */
    public static long rssKiB() {
        return status().getOrDefault("VmRSS", -1L);
    }

    /** Number of entries in {@code /proc/self/fd} (the listing's own descriptor included, as always). */
    public static int openFileDescriptors() {
        int count = 0;
        try (DirectoryStream<Path> entries = Files.newDirectoryStream(Paths.get("/proc/self/fd"))) {
            for (Path ignored : entries) {
                count++;
            }
        } catch (IOException e) {
            throw new IllegalStateException("cannot list /proc/self/fd", e);
        }
        return count;
    }

    /**
     * Open file descriptors by kind: what {@code /proc/self/fd/N} links to with the inode or name
     * that tells one from another left out ({@code socket}, {@code anon_inode:[eventfd]},
     * {@code /dev/shm/ucx_shm_posix_*}, a file's path as it is).
     */
    public static Map<String, Integer> descriptorKinds() {
        Map<String, Integer> kinds = new TreeMap<>();
        try (DirectoryStream<Path> entries = Files.newDirectoryStream(Paths.get("/proc/self/fd"))) {
            for (Path entry : entries) {
                String target;
                try {
                    target = Files.readSymbolicLink(entry).toString();
                } catch (IOException e) {
                    continue; // closed since the listing (the listing's own descriptor, for one)
                }
                String kind = target.replaceFirst("^(socket|pipe):\\[\\d+\\]$", "$1")
                        .replaceFirst("^/dev/shm/(\\w*?)_?[0-9a-f]+( \\(deleted\\))?$", "/dev/shm/$1_*")
                        .replaceFirst("^/proc/\\d+/", "/proc/*/");
                kinds.merge(kind, 1, Integer::sum);
            }
        } catch (IOException e) {
            throw new IllegalStateException("cannot list /proc/self/fd", e);
        }
        return kinds;
    }

    /**
     * Memory mappings by kind: the mapped file with what tells one from another left out
     * ({@code /dev/shm/ucx_shm_posix_* (deleted)}, a library's path), or {@code [anon <perms>]}.
     */
    public static Map<String, Integer> mappingKinds() {
        Map<String, Integer> kinds = new TreeMap<>();
        for (String line : maps()) {
            String[] fields = line.trim().split("\\s+", 6);
            String kind = fields.length > 5
                    ? fields[5].replaceAll("[0-9a-f]{6,}", "*").replaceFirst("^/proc/\\d+/", "/proc/*/")
                    : "[anon " + fields[1] + "]";
            kinds.merge(kind, 1, Integer::sum);
        }
        return kinds;
    }

    /**
     * Kinds whose count differs between two {@link #descriptorKinds()} or two
     * {@link #mappingKinds()}: {@code kind before->after}.
     */
    public static String kindChange(Map<String, Integer> before, Map<String, Integer> after) {
        Map<String, Integer> all = new TreeMap<>(before);
        after.keySet().forEach(kind -> all.putIfAbsent(kind, 0));
        StringBuilder change = new StringBuilder();
        for (String kind : all.keySet()) {
            int was = before.getOrDefault(kind, 0);
            int is = after.getOrDefault(kind, 0);
            if (was != is) {
                change.append(change.length() == 0 ? "" : ", ").append(kind).append(' ').append(was).append("->").append(is);
            }
        }
        return change.toString();
    }

    /** The lines of {@code /proc/self/maps}. */
    private static List<String> maps() {
        try {
            return Files.readAllLines(Paths.get("/proc/self/maps"), StandardCharsets.US_ASCII);
        } catch (IOException e) {
            throw new IllegalStateException("cannot read /proc/self/maps", e);
        }
    }

    /** The numeric fields of {@code /proc/self/status} (sizes in KiB as the kernel gives them). */
    private static Map<String, Long> status() {
        Map<String, Long> values = new HashMap<>();
        try {
            for (String line : Files.readAllLines(Paths.get("/proc/self/status"), StandardCharsets.US_ASCII)) {
                int colon = line.indexOf(':');
                if (colon < 0) {
                    continue;
                }
                String[] words = line.substring(colon + 1).trim().split("\\s+");
                if (words.length > 0 && words[0].matches("\\d+")) {
                    values.put(line.substring(0, colon), Long.parseLong(words[0]));
                }
            }
        } catch (IOException e) {
            throw new IllegalStateException("cannot read /proc/self/status", e);
        }
        return values;
    }

    /** One line, as {@link #parse(String)} reads it. */
    public String encode() {
        return String.format(Locale.ROOT, "fds=%d maps=%d ucxMaps=%d rssKiB=%d heapKiB=%d threads=%d", fds, mappings,
                ucxMappings, rssKiB, heapKiB, threads);
    }

    /** The snapshot {@link #encode()} wrote. */
    public static Footprint parse(String text) {
        Map<String, Long> values = new HashMap<>();
        for (String word : text.trim().split("\\s+")) {
            int equals = word.indexOf('=');
            if (equals > 0) {
                values.put(word.substring(0, equals), Long.parseLong(word.substring(equals + 1)));
            }
        }
        for (String key : new String[] {"fds", "maps", "ucxMaps", "rssKiB", "heapKiB", "threads"}) {
            if (!values.containsKey(key)) {
                throw new IllegalArgumentException("no " + key + " in footprint '" + text + "'");
            }
        }
        return new Footprint(values.get("fds").intValue(), values.get("maps").intValue(), values.get("ucxMaps").intValue(),
                values.get("rssKiB"), values.get("heapKiB"), values.get("threads").intValue());
    }

    @Override
    public String toString() {
        return encode();
    }
}
