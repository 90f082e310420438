package dev.hadronio.examples.apps;

import dev.hadronio.examples.util.OwnProcess;
import java.io.IOException;
import java.util.ArrayList;
import java.util.List;
import java.util.stream.Collectors;

/**
 * The CPUs this process may run on, split in two halves for {@code bench apps --apart}: the server
 * JVM runs on the first, the client JVM on the second ({@code taskset -c}), so that the two sides
 * do not take turns on the same cores, as on two hosts.
 */
final class CoreHalves {
    final String server;
    final String client;

    private CoreHalves(String server, String client) {
        this.server = server;
        this.client = client;
    }

    /** The halves of this process's CPUs ({@code Cpus_allowed_list} of {@code /proc/self/status}). */
    static CoreHalves ofThisProcess() throws IOException {
        return of(OwnProcess.status("Cpus_allowed_list"));
    }

    /** The halves of a CPU list as the kernel writes it ("0-3", "0,2,4-7"); the client gets the odd one. */
    static CoreHalves of(String list) {
        List<Integer> cpus = parse(list);
        if (cpus.size() < 2) {
            throw new IllegalArgumentException("--apart needs at least 2 CPUs, this process may use " + cpus.size() + " (" + list + ")");
        }
        int half = cpus.size() / 2;
        return new CoreHalves(join(cpus.subList(0, half)), join(cpus.subList(half, cpus.size())));
    }

    static List<Integer> parse(String list) {
        List<Integer> cpus = new ArrayList<>();
        for (String part : list.trim().split(",")) {
            String[] range = part.trim().split("-", -1);
            try {
                int first = Integer.parseInt(range[0]);
                int last = range.length == 2 ? Integer.parseInt(range[1]) : first;
                if (range.length > 2 || first < 0 || last < first) {
                    throw new NumberFormatException();
                }
                for (int cpu = first; cpu <= last; cpu++) {
                    cpus.add(cpu);
                }
            } catch (NumberFormatException e) {
                throw new IllegalArgumentException("not a CPU list: \"" + list + "\" (at \"" + part + "\")");
            }
        }
        return cpus;
    }

    private static String join(List<Integer> cpus) {
        return cpus.stream().map(String::valueOf).collect(Collectors.joining(","));
    }

    /** {@code command} run by {@code taskset} on {@code cpus}. */
    static List<String> pinned(String cpus, List<String> command) {
        List<String> pinned = new ArrayList<>(List.of("taskset", "-c", cpus));
        pinned.addAll(command);
        return pinned;
    }
}
