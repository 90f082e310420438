package dev.hadronio.reliability;

import java.io.ByteArrayOutputStream;
import java.io.File;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Two hosts on one machine: network namespaces {@code <prefix>-<pid>-a} and {@code -b} joined by
 * a veth pair with the private addresses {@link #ADDRESS_A} and {@link #ADDRESS_B} (a /30 that
 * exists only inside the two namespaces). Needs root and iproute2; see {@link #unavailable()}.
 * {@link #close()} deletes both namespaces (which deletes the veth pair); {@link #create} first
 * deletes namespaces of this prefix left behind by test JVMs that no longer run.
 */
public final class VethPair implements AutoCloseable {
    public static final String ADDRESS_A = "10.213.0.1";
    public static final String ADDRESS_B = "10.213.0.2";

    private static final String[] IP_CANDIDATES = {"ip", "/usr/sbin/ip", "/sbin/ip", "/usr/bin/ip", "/bin/ip"};

    public final String namespaceA;
    public final String namespaceB;
    public final String deviceA;
    public final String deviceB;
    private final String ip;

    private VethPair(String ip, String prefix, String tag) {
        long pid = ProcessHandle.current().pid();
        this.ip = ip;
        namespaceA = prefix + "-" + pid + "-a";
        namespaceB = prefix + "-" + pid + "-b";
        // Interface names have at most 15 characters.
        deviceA = tag + pid + "a";
        deviceB = tag + pid + "b";
    }

    /** Why namespaces cannot be used here, or null if they can. */
    public static String unavailable() {
        if (!"root".equals(System.getProperty("user.name"))) {
            String uid = null;
            try {
                uid = run(List.of("id", "-u"), false).trim();
            } catch (IOException e) {
                // fall through
            }
            if (!"0".equals(uid)) {
                return "not running as root (uid " + uid + ")";
            }
        }
        if (ipCommand() == null) {
            return "`ip netns` (iproute2) is not available";
        }
        return null;
    }

    private static String ipCommand() {
        for (String candidate : IP_CANDIDATES) {
            if (candidate.startsWith("/") && !new File(candidate).canExecute()) {
                continue;
            }
            try {
                run(List.of(candidate, "netns", "list"), true);
                return candidate;
            } catch (IOException e) {
                // try the next one
            }
        }
        return null;
    }

    /**
     * Creates the pair: {@code prefix} names the namespaces, {@code tag} (at most 5 characters)
     * the devices.
     */
    public static VethPair create(String prefix, String tag) throws IOException {
        String ip = ipCommand();
        if (ip == null) {
            throw new IOException("`ip netns` is not available");
        }
        removeStale(ip, prefix);
        VethPair pair = new VethPair(ip, prefix, tag);
        pair.close();
        boolean done = false;
        try {
            pair.ip("netns", "add", pair.namespaceA);
            pair.ip("netns", "add", pair.namespaceB);
            pair.ip("link", "add", pair.deviceA, "type", "veth", "peer", "name", pair.deviceB);
            pair.ip("link", "set", pair.deviceA, "netns", pair.namespaceA);
            pair.ip("link", "set", pair.deviceB, "netns", pair.namespaceB);
            pair.ip("-n", pair.namespaceA, "addr", "add", ADDRESS_A + "/30", "dev", pair.deviceA);
            pair.ip("-n", pair.namespaceB, "addr", "add", ADDRESS_B + "/30", "dev", pair.deviceB);
            for (String namespace : new String[] {pair.namespaceA, pair.namespaceB}) {
                pair.ip("-n", namespace, "link", "set", "lo", "up");
            }
            pair.setUp(true, true);
            pair.setUp(false, true);
            done = true;
            return pair;
        } finally {
            if (!done) {
                pair.close();
            }
        }
    }

    /** Deletes namespaces named {@code prefix-<pid>-a|b} whose test JVM is gone. */
    private static void removeStale(String ip, String prefix) throws IOException {
        Pattern pattern = Pattern.compile(Pattern.quote(prefix) + "-(\\d+)-[ab]");
        for (String line : run(List.of(ip, "netns", "list"), true).split("\n")) {
            String name = line.trim().split("\\s+")[0];
            Matcher matcher = pattern.matcher(name);
            if (matcher.matches() && ProcessHandle.of(Long.parseLong(matcher.group(1))).isEmpty()) {
                delete(ip, name);
            }
        }
    }

    /** The prefix that runs a command in namespace A or B. */
    public String[] exec(boolean a) {
        return new String[] {ip, "netns", "exec", a ? namespaceA : namespaceB};
    }

    /** Sets the veth end in namespace A and/or B up or down. */
    public void setUp(boolean a, boolean up) throws IOException {
        if (a) {
            ip("-n", namespaceA, "link", "set", deviceA, up ? "up" : "down");
        } else {
            ip("-n", namespaceB, "link", "set", deviceB, up ? "up" : "down");
        }
    }

    private void ip(String... arguments) throws IOException {
        List<String> command = new ArrayList<>();
        command.add(ip);
        command.addAll(List.of(arguments));
        run(command, true);
    }

    /** Deletes both namespaces (and with them the veth pair); idempotent. */
    @Override
    public void close() {
        for (String namespace : new String[] {namespaceA, namespaceB}) {
            delete(ip, namespace);
        }
    }

    /** Kills what still runs in a namespace of ours (children of a test that died), then deletes it. */
    private static void delete(String ip, String namespace) {
        try {
            for (String pid : run(List.of(ip, "netns", "pids", namespace), false).split("\\s+")) {
                if (pid.matches("\\d+")) {
                    ProcessHandle.of(Long.parseLong(pid)).ifPresent(ProcessHandle::destroyForcibly);
                }
            }
        } catch (IOException e) {
            // no such namespace
        }
        runQuietly(List.of(ip, "netns", "delete", namespace));
    }

    @Override
    public String toString() {
        return "namespaces " + namespaceA + " / " + namespaceB;
    }

    private static void runQuietly(List<String> command) {
        try {
            run(command, false);
        } catch (IOException e) {
            // best effort
        }
    }

    /** Runs a command (bounded to 20 s); returns its output, failing on a non-zero status if {@code check}. */
    static String run(List<String> command, boolean check) throws IOException {
        Process process = new ProcessBuilder(command).redirectErrorStream(true).start();
        process.getOutputStream().close();
        ByteArrayOutputStream output = new ByteArrayOutputStream();
        try (InputStream in = process.getInputStream()) {
            in.transferTo(output);
            if (!process.waitFor(20, TimeUnit.SECONDS)) {
                process.destroyForcibly();
                throw new IOException(String.join(" ", command) + " did not finish within 20 s");
            }
        } catch (InterruptedException e) {
            process.destroyForcibly();
            Thread.currentThread().interrupt();
            throw new IOException("interrupted: " + String.join(" ", command));
        }
        String text = output.toString(StandardCharsets.UTF_8);
        if (check && process.exitValue() != 0) {
            throw new IOException(String.join(" ", command) + " failed with status " + process.exitValue() + ": "
                + text.trim());
        }
        return text;
    }
}
