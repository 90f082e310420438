package dev.hadronio;

import dev.hadronio.internal.Native;
import dev.hadronio.internal.NativeLoader;
import java.io.BufferedReader;
import java.io.File;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.lang.management.ManagementFactory;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.nio.channels.spi.SelectorProvider;
import java.nio.charset.StandardCharsets;
import java.nio.file.FileStore;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.TimeUnit;

/**
 * {@code java -jar hadronio-<version>.jar} (also {@code hadronio doctor}): checks what hadroNIO
 * needs on this machine and says what to fix. It looks at the JDK, loads the native library and UCX,
 * the temporary directory the library is extracted to, shared memory and namespaces, then connects
 * two child JVMs over loopback, once with hadroNIO and once with the JDK's provider, and shows each
 * connection's path and round trip. Exit status 0 when everything works, 1 otherwise.
 */
public final class Doctor {
    private static final int ROUND_TRIPS = 10_000;

    private final PrintStream out;
    private final List<String> problems = new ArrayList<>();

    private Doctor(PrintStream out) {
        this.out = out;
    }

    public static void main(String[] args) throws Exception {
        if (args.length >= 1 && args[0].equals("--serve")) {
            serve();
            return;
        }
        if (args.length >= 2 && args[0].equals("--ping")) {
            ping(Integer.parseInt(args[1]));
            return;
        }
        System.exit(run(System.out));
    }

    /** Runs every check, printing as it goes; returns the exit status. */
    public static int run(PrintStream out) {
        Doctor doctor = new Doctor(out);
        doctor.checkAll();
        return doctor.problems.isEmpty() ? 0 : 1;
    }

    private void checkAll() {
        out.println("hadroNIO doctor");
        String version = System.getProperty("java.version") + " (" + System.getProperty("java.vm.name") + ", "
                + System.getProperty("java.home") + ")";
        line("JDK", version);
        List<String> flags = ManagementFactory.getRuntimeMXBean().getInputArguments();
        line("JVM flags", flags.isEmpty() ? "(none)" : String.join(" ", flags));
        line("platform", System.getProperty("os.name") + " " + System.getProperty("os.arch") + ", "
                + Runtime.getRuntime().availableProcessors() + " cores, " + glibc()
                + " (hadroNIO needs linux-x86_64 and glibc " + NativeLoader.GLIBC + " or newer)");
        Path tmp = Paths.get(System.getProperty("java.io.tmpdir"));
        String tmpState = Files.isWritable(tmp) ? "writable" : "NOT writable";
        boolean noexec = NativeLoader.noexec(tmp);
        line("temporary directory", tmp + " (" + tmpState + (noexec ? ", mounted noexec" : "") + ")");
        if (!Files.isWritable(tmp) || noexec) {
            problem("the native library is extracted to java.io.tmpdir, which must be writable and allow code: set"
                    + " -Djava.io.tmpdir (or -Dhadronio.native.directory) to such a directory");
        }
        boolean active = false;
        try {
            HadronioProvider provider = new HadronioProvider();
            active = provider.isActive();
            if (active) {
                line("native library", Native.version());
            } else {
                line("native library", "NOT loaded: the JDK's provider would be used instead");
                problem(provider.problem());
            }
        } catch (RuntimeException | LinkageError e) {
            line("native library", "NOT loaded");
            problem(String.valueOf(e.getMessage()));
        }
        sharedMemory();
        namespaces();
        if (active) {
            loopback();
        }
        out.println();
        if (problems.isEmpty()) {
            out.println("all checks passed");
        } else {
            out.println(problems.size() + " problem" + (problems.size() == 1 ? "" : "s") + ":");
            for (String problem : problems) {
                out.println("  - " + problem);
            }
        }
    }

    /** The system's C library as {@code getconf} names it ({@code glibc 2.36}), or a question mark. */
    private static String glibc() {
        try {
            Process process = new ProcessBuilder("getconf", "GNU_LIBC_VERSION").redirectErrorStream(true).start();
            String text = new String(process.getInputStream().readAllBytes(), StandardCharsets.UTF_8).trim();
            return process.waitFor() == 0 && !text.isEmpty() ? text : "C library unknown";
        } catch (IOException | InterruptedException e) {
            return "C library unknown";
        }
    }

    private void line(String what, String value) {
        out.printf(Locale.ROOT, "  %-20s %s%n", what, value);
    }

    private void problem(String text) {
        problems.add(text);
    }

    private void sharedMemory() {
        Path shm = Paths.get("/dev/shm");
        try {
            FileStore store = Files.getFileStore(shm);
            long total = store.getTotalSpace() >> 20;
            long free = store.getUsableSpace() >> 20;
            line("shared memory", "/dev/shm " + total + " MiB, " + free + " MiB free");
            if (free < 64) {
                problem("/dev/shm has " + free + " MiB free: UCX's shared-memory transport needs more (containers:"
                        + " docker run --shm-size=1g, Kubernetes: an emptyDir volume with medium Memory)");
            }
        } catch (IOException e) {
            line("shared memory", "/dev/shm missing (" + e.getMessage() + ")");
            problem("no /dev/shm: connections on this host can use only UCX's network transports or TCP");
        }
    }

    private void namespaces() {
        StringBuilder text = new StringBuilder();
        for (String kind : new String[] {"net", "ipc", "mnt", "pid"}) {
            try {
                String own = Files.readSymbolicLink(Paths.get("/proc/self/ns/" + kind)).toString();
                text.append(kind).append(' ').append(own.replaceAll("\\D", "")).append("  ");
            } catch (IOException | UnsupportedOperationException e) {
                text.append(kind).append(" ?  ");
            }
        }
        line("namespaces", text.toString().trim() + " (peers on this host share memory only within the same ones)");
    }

    /** Connects two child JVMs with hadroNIO and with the JDK's provider: path and round trip. */
    private void loopback() {
        out.printf(Locale.ROOT, "  %-20s %-12s %-14s %s%n", "loopback", "provider", "64 B p50", "path");
        for (boolean hadronio : new boolean[] {false, true}) {
            String name = hadronio ? "hadroNIO" : "JDK";
            try {
                String[] result = exchange(hadronio);
                out.printf(Locale.ROOT, "  %-20s %-12s %-14s %s%n", "", name, result[0], result[1]);
                if (hadronio && !result[1].startsWith("ucx")) {
                    problem("a loopback connection between two hadroNIO JVMs stays on TCP (" + result[1] + ")");
                }
            } catch (Exception e) {
                out.printf(Locale.ROOT, "  %-20s %-12s failed: %s%n", "", name, e.getMessage());
                problem("a loopback connection with " + name + " failed: " + e.getMessage());
            }
        }
    }

    private static String[] exchange(boolean hadronio) throws Exception {
        Process server = child(hadronio, "--serve");
        Process client = null;
        try {
            BufferedReader serverOut = reader(server);
            String port = serverOut.readLine();
            if (port == null || !port.startsWith("PORT ")) {
                throw new IOException("the server JVM did not start: " + port + drain(serverOut));
            }
            client = child(hadronio, "--ping", port.substring(5));
            BufferedReader clientOut = reader(client);
            String p50 = null;
            String path = null;
            for (String line = clientOut.readLine(); line != null; line = clientOut.readLine()) {
                if (line.startsWith("P50 ")) {
                    p50 = line.substring(4);
                } else if (line.startsWith("PATH ")) {
                    path = line.substring(5);
                } else if (line.startsWith("FAILED ")) {
                    throw new IOException(line.substring(7));
                }
            }
            if (!client.waitFor(60, TimeUnit.SECONDS) || p50 == null) {
                throw new IOException("the client JVM did not finish");
            }
            return new String[] {p50, path};
        } finally {
            server.destroyForcibly();
            if (client != null) {
                client.destroyForcibly();
            }
        }
    }

    private static String drain(BufferedReader reader) throws IOException {
        StringBuilder rest = new StringBuilder();
        for (String line = reader.readLine(); line != null && rest.length() < 2000; line = reader.readLine()) {
            rest.append('\n').append(line);
        }
        return rest.toString();
    }

    private static BufferedReader reader(Process process) {
        return new BufferedReader(new InputStreamReader(process.getInputStream(), StandardCharsets.UTF_8));
    }

    private static Process child(boolean hadronio, String... args) throws IOException {
        List<String> command = new ArrayList<>();
        command.add(Paths.get(System.getProperty("java.home"), "bin", "java").toString());
        if (Runtime.version().feature() >= 17) {
            command.add("--enable-native-access=ALL-UNNAMED");
        }
        for (String name : System.getProperties().stringPropertyNames()) {
            if (name.startsWith("hadronio.")) {
                command.add("-D" + name + "=" + System.getProperty(name));
            }
        }
        if (hadronio) {
            command.add("-Djava.nio.channels.spi.SelectorProvider=" + HadronioProvider.class.getName());
        }
        command.add("-cp");
        command.add(System.getProperty("java.class.path"));
        command.add(Doctor.class.getName());
        command.addAll(Arrays.asList(args));
        return new ProcessBuilder(command).redirectErrorStream(true).redirectInput(new File("/dev/null")).start();
    }

    /** Child: an echo server for one connection. */
    private static void serve() throws IOException {
        try (ServerSocketChannel server = ServerSocketChannel.open()) {
            server.bind(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0));
            System.out.println("PORT " + ((InetSocketAddress) server.getLocalAddress()).getPort());
            System.out.flush();
            try (SocketChannel channel = server.accept()) {
                ByteBuffer buffer = ByteBuffer.allocateDirect(64);
                while (channel.read(buffer) >= 0) {
                    if (!buffer.hasRemaining()) {
                        buffer.flip();
                        while (buffer.hasRemaining()) {
                            channel.write(buffer);
                        }
                        buffer.clear();
                    }
                }
            }
        }
    }

    /** Child: round trips of 64 bytes; prints the median and the connection's path. */
    private static void ping(int port) {
        try (SocketChannel channel = SocketChannel.open(new InetSocketAddress(InetAddress.getLoopbackAddress(), port))) {
            ByteBuffer buffer = ByteBuffer.allocateDirect(64);
            long[] nanos = new long[ROUND_TRIPS];
            for (int i = -ROUND_TRIPS; i < ROUND_TRIPS; i++) {
                long start = System.nanoTime();
                buffer.clear();
                while (buffer.hasRemaining()) {
                    channel.write(buffer);
                }
                buffer.clear();
                while (buffer.hasRemaining()) {
                    if (channel.read(buffer) < 0) {
                        throw new IOException("the echo server closed");
                    }
                }
                if (i >= 0) {
                    nanos[i] = System.nanoTime() - start;
                }
            }
            Arrays.sort(nanos);
            System.out.printf(Locale.ROOT, "P50 %.1f us%n", nanos[ROUND_TRIPS / 2] / 1000.0);
            SelectorProvider provider = SelectorProvider.provider();
            System.out.println("PATH " + (provider instanceof HadronioProvider ? HadronioProvider.transportOf(channel)
                    : "tcp (the JDK's channel)"));
        } catch (Exception e) {
            System.out.println("FAILED " + e);
        }
    }
}
