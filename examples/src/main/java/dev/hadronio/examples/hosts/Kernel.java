package dev.hadronio.examples.hosts;

import java.io.File;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.TimeUnit;

/**
 * What the checks read from and do to this host's kernel: commands of iproute2 ({@code ip},
 * {@code tc}, {@code rdma}), the RDMA devices' counters, a process's descriptors and memory.
 */
final class Kernel {
    private static final Path RDMA_CLASS = Paths.get("/sys/class/infiniband");

    private Kernel() {
    }

    /** Runs a command; returns its output, or throws with it if the command failed. */
    static String run(String... command) throws IOException, InterruptedException {
        Process process = new ProcessBuilder(command).redirectErrorStream(true).start();
        byte[] output = process.getInputStream().readAllBytes();
        if (!process.waitFor(30, TimeUnit.SECONDS)) {
            process.destroyForcibly();
            throw new IOException(String.join(" ", command) + ": no answer within 30 s");
        }
        String text = new String(output, StandardCharsets.UTF_8).trim();
        if (process.exitValue() != 0) {
            throw new IOException(String.join(" ", command) + " failed (" + process.exitValue() + "): " + text);
        }
        return text;
    }

    /**
     * The RDMA resources ({@code rdma resource show qp|mr}) of this process: queue pairs, memory
     * regions, their bytes. The kernel names the thread that made each one ("pid" is its task id).
     */
    static long[] rdmaResources() throws IOException, InterruptedException {
        Set<String> threads = new HashSet<>(Arrays.asList(new File("/proc/self/task").list()));
        long qps = 0;
        for (String line : run("rdma", "resource", "show", "qp").split("\n")) {
            if (threads.contains(field(line, "pid"))) {
                qps++;
            }
        }
        long mrs = 0;
        long bytes = 0;
        for (String line : run("rdma", "resource", "show", "mr").split("\n")) {
            if (threads.contains(field(line, "pid"))) {
                mrs++;
                String length = field(line, "mrlen");
                bytes += length.isEmpty() ? 0 : Long.parseLong(length);
            }
        }
        return new long[] {qps, mrs, bytes};
    }

    private static List<String> words(String line) {
        return Arrays.asList(line.trim().split("\\s+"));
    }

    /** The word after {@code name} in a line of {@code name value} pairs, or "". */
    private static String field(String line, String name) {
        List<String> words = words(line);
        int at = words.indexOf(name);
        return at >= 0 && at + 1 < words.size() ? words.get(at + 1) : "";
    }

    /** Whether this host has an RDMA device at all. */
    static boolean rdmaDevice() {
        File[] devices = RDMA_CLASS.toFile().listFiles();
        return devices != null && devices.length > 0;
    }

    /**
     * Whether this host has a software RDMA device (Soft-RoCE, soft-iWARP): one of the kernel's
     * RDMA class that hangs off no bus.
     */
    static boolean softwareRdma() {
        File[] devices = RDMA_CLASS.toFile().listFiles();
        for (File device : devices == null ? new File[0] : devices) {
            try {
                if (device.getCanonicalPath().contains("/virtual/")) {
                    return true;
                }
            } catch (IOException e) {
                // not readable: not counted
            }
        }
        return false;
    }

    /** The counters of every port of every RDMA device ({@code hw_counters}), by {@code device/port/name}. */
    static Map<String, Long> rdmaCounters() throws IOException {
        Map<String, Long> counters = new LinkedHashMap<>();
        File[] devices = RDMA_CLASS.toFile().listFiles();
        for (File device : devices == null ? new File[0] : devices) {
            File[] ports = new File(device, "ports").listFiles();
            for (File port : ports == null ? new File[0] : ports) {
                File[] files = new File(port, "hw_counters").listFiles();
                for (File file : files == null ? new File[0] : files) {
                    String text = new String(Files.readAllBytes(file.toPath()), StandardCharsets.US_ASCII).trim();
                    if (text.matches("[0-9]+")) {
                        counters.put(device.getName() + "/" + port.getName() + "/" + file.getName(), Long.parseLong(text));
                    }
                }
            }
        }
        return counters;
    }

    /** The counters that grew from {@code before} to {@code after}, with how much, as {@code name +n} words. */
    static String growth(Map<String, Long> before, Map<String, Long> after) {
        List<String> grown = new ArrayList<>();
        for (Map.Entry<String, Long> entry : after.entrySet()) {
            long delta = entry.getValue() - before.getOrDefault(entry.getKey(), 0L);
            if (delta > 0) {
                grown.add(entry.getKey() + " +" + delta);
            }
        }
        return grown.isEmpty() ? "(none)" : String.join(", ", grown);
    }
}
