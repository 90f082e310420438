package dev.hadronio.compat;

import java.io.BufferedReader;
import java.io.BufferedWriter;
import java.io.Closeable;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.SocketTimeoutException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentSkipListSet;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Runs one compatibility scenario of issue 3 as child JVMs, checks that each child really runs on the
 * requested {@link java.nio.channels.spi.SelectorProvider}, and never lets the scenario outlive its time
 * limit: on timeout every child gets a thread dump (SIGQUIT, printed into the log) and is killed. The
 * supervisor itself runs on the JDK provider; its children inherit its class path.
 *
 * <pre>
 * Supervisor netty|http|echo --provider jdk|hadronio --timeout-seconds N --work-dir DIR
 *            [--child-jvm-arg ARG]...
 *            netty: --excludes FILE --logback FILE [--select-class CLASS]...
 *            echo:  [--connections 16] [--bytes 1073741824]
 * </pre>
 *
 * Exit status 0 when the scenario passed, 1 otherwise. Children's output is copied, prefixed with their
 * name, to standard output and to {@code DIR/NAME.log}.
 */
public final class Supervisor {
    static final String HADRONIO_PROVIDER = "dev.hadronio.HadronioProvider";
    private static final String NETTY_PACKAGE = "io.netty.testsuite.transport.socket";
    /** A failure line of {@link NettySummaryListener}: {@code FAILED [(container) ]Class#method ...}. */
    private static final Pattern NETTY_FAILURE = Pattern.compile("FAILED (?:\\(container\\) )?(\\w+)[#: \\[]");
    private static final Pattern READY = Pattern.compile("READY port=(\\d+)");
    private static final Pattern NETTY_SUMMARY = Pattern.compile(
            Pattern.quote(NettySummaryListener.SUMMARY_PREFIX) + "(\\d+) passed, (\\d+) failed, (\\d+) excluded");

    private final String scenario;
    private final Map<String, List<String>> options;
    private final String provider;
    private final long timeoutSeconds;
    private final long deadlineNanos;
    private final long deadlineMillis;
    private final Path workDir;
    private final List<Child> children = new CopyOnWriteArrayList<>();

    private Supervisor(String scenario, Map<String, List<String>> options) {
        this.scenario = scenario;
        this.options = options;
        this.provider = option("provider", null);
        if (!"jdk".equals(provider) && !"hadronio".equals(provider)) {
            throw new IllegalArgumentException("--provider must be jdk or hadronio, not " + provider);
        }
        this.timeoutSeconds = Long.parseLong(option("timeout-seconds", "600"));
        this.deadlineNanos = System.nanoTime() + TimeUnit.SECONDS.toNanos(timeoutSeconds);
        this.deadlineMillis = System.currentTimeMillis() + TimeUnit.SECONDS.toMillis(timeoutSeconds);
        this.workDir = Paths.get(option("work-dir", "build/compat/" + scenario)).toAbsolutePath();
    }

    public static void main(String[] args) {
        if (args.length == 0 || (args.length - 1) % 2 != 0) {
            System.err.println("usage: Supervisor netty|http|echo --provider jdk|hadronio [--name value]...");
            System.exit(2);
        }
        Map<String, List<String>> options = new HashMap<>();
        for (int i = 1; i < args.length; i += 2) {
            if (!args[i].startsWith("--")) {
                throw new IllegalArgumentException("expected an option, got " + args[i]);
            }
            options.computeIfAbsent(args[i].substring(2), k -> new ArrayList<>()).add(args[i + 1]);
        }
        System.exit(new Supervisor(args[0], options).run());
    }

    private int run() {
        String title = title();
        Runtime.getRuntime().addShutdownHook(new Thread(() -> children.forEach(Child::destroy), "compat-kill"));
        CompatChild.daemon("compat-supervisor-deadline", () -> {
            // Backstop for a supervisor that hangs itself; children are killed by the shutdown hook.
            sleepUntil(deadlineNanos + TimeUnit.SECONDS.toNanos(60));
            System.out.println(title + ": supervisor stuck past its deadline, exiting");
            System.out.flush();
            System.exit(CompatChild.EXIT_DEADLINE);
        });
        long start = System.nanoTime();
        System.out.println(title + ": provider " + provider + ", timeout " + timeoutSeconds + " s, logs in " + workDir);
        String failure;
        try {
            Files.createDirectories(workDir);
            switch (scenario) {
                case "netty":
                    failure = runNetty();
                    break;
                case "http":
                    failure = runPair("http-server", HttpCompatServer.class, Collections.emptyList(),
                            "http-client", HttpCompatClient.class, Collections.emptyList(), "-Xmx1g");
                    break;
                case "echo":
                    failure = runPair("echo-server", NettyEchoServer.class, Collections.emptyList(),
                            "echo-client", NettyEchoClient.class,
                            Arrays.asList(option("connections", "16"), option("bytes", Long.toString(1L << 30))),
                            "-Xmx512m");
                    break;
                default:
                    failure = "unknown scenario " + scenario;
                    break;
            }
        } catch (IOException | RuntimeException e) {
            failure = e.toString();
            e.printStackTrace(System.out);
        } catch (InterruptedException e) {
            failure = e.toString();
            Thread.currentThread().interrupt();
        } finally {
            for (Child child : children) {
                child.killWithThreadDump();
            }
        }
        double seconds = (System.nanoTime() - start) / 1e9;
        if (failure == null) {
            System.out.println(String.format("%s: PASSED with provider %s in %.1f s", title, provider, seconds));
        } else {
            System.out.println(String.format("%s: FAILED with provider %s in %.1f s: %s", title, provider, seconds,
                    failure));
        }
        System.out.flush();
        return failure == null ? 0 : 1;
    }

    private String title() {
        switch (scenario) {
            case "netty":
                return "netty testsuite";
            case "http":
                return "http compat";
            case "echo":
                return "netty echo";
            default:
                return scenario;
        }
    }

    /**
     * The netty transport testsuite through the JUnit console launcher; null when it passed. Classes
     * with failures run once more on their own (several netty tests depend on timing or block an
     * event loop on purpose); the failures of the first run stay in its report and are listed.
     */
    private String runNetty() throws IOException, InterruptedException {
        try (Blackhole blackhole = Blackhole.open()) {
            List<String> classes = options.getOrDefault("select-class", Collections.emptyList());
            Child first = startNetty("netty-testsuite", classes, "reports", blackhole);
            String failure = nettyOutcome(first);
            if (failure != null && !first.failedClasses.isEmpty() && failure.contains(NETTY_TESTS_FAILED)) {
                List<String> again = new ArrayList<>(first.failedClasses);
                System.out.println("netty testsuite: running " + again + " again on their own");
                Child second = startNetty("netty-testsuite-rerun", again, "reports-rerun", blackhole);
                String secondFailure = nettyOutcome(second);
                if (secondFailure != null) {
                    return failure + "; again on their own: " + secondFailure;
                }
                System.out.println("netty testsuite: FLAKY: failed in the full run, passed on their own: " + again
                        + " (see " + first.log + ")");
                failure = null;
            }
            if (failure == null && !blackhole.works()) {
                System.out.println("netty testsuite: warning: could not fill a loopback accept queue, so the "
                        + "connect-timeout tests ran against a refusing port");
            }
            return failure;
        }
    }

    private static final String NETTY_TESTS_FAILED = "tests failed";

    private Child startNetty(String name, List<String> classes, String reports, Blackhole blackhole) throws IOException {
        Path nettyLog = workDir.resolve(name + "-logback.log");
        List<String> jvm = new ArrayList<>(Arrays.asList(
                "-Xmx2g",
                "-Dlogback.configurationFile=" + Paths.get(option("logback", null)).toAbsolutePath(),
                "-Dcompat.netty.logFile=" + nettyLog,
                "-D" + NettyExcludes.FILE_PROPERTY + "=" + Paths.get(option("excludes", null)).toAbsolutePath(),
                "-D" + NettySummaryListener.ENABLE_PROPERTY + "=true",
                // Connect-timeout tests aim at io.netty.testsuite.badHost (default 198.51.100.254, off this
                // machine); point them at a loopback listener whose accept queue is full instead.
                "-Dio.netty.testsuite.badHost=127.0.0.1",
                "-Dio.netty.testsuite.badPort=" + blackhole.port()));
        List<String> args = new ArrayList<>(Arrays.asList(
                "execute",
                "--disable-banner",
                "--disable-ansi-colors",
                "--details=summary",
                "--include-engine=junit-jupiter",
                "--fail-if-no-tests",
                "--reports-dir=" + workDir.resolve(reports),
                // Tests without their own @Timeout get one; a stuck test is abandoned, not waited for.
                "--config=junit.jupiter.execution.timeout.default=120s",
                "--config=junit.jupiter.execution.timeout.thread.mode.default=SEPARATE_THREAD"));
        if (classes.isEmpty()) {
            args.add("--select-package=" + NETTY_PACKAGE);
        } else {
            for (String className : classes) {
                args.add("--select-class=" + (className.indexOf('.') < 0 ? NETTY_PACKAGE + "." + className : className));
            }
        }
        Child child = start(name, "org.junit.platform.console.ConsoleLauncher", jvm, args);
        child.nettyLog = nettyLog;
        return child;
    }

    /** Null when the launcher run of {@code child} passed, else what went wrong. */
    private String nettyOutcome(Child child) throws InterruptedException {
        Integer status = child.waitFor(deadlineNanos);
        if (status == null) {
            return "timed out after " + timeoutSeconds + " s (thread dump in " + child.log + "); "
                    + lastLine(child.nettyLog, "Running: ");
        }
        String problem = child.providerProblem();
        if (problem != null) {
            return problem;
        }
        Matcher summary = child.find(NETTY_SUMMARY);
        if (summary == null) {
            return "the console launcher (exit status " + status + ") printed no '"
                    + NettySummaryListener.SUMMARY_PREFIX + "' line: is the compat listener registered?";
        }
        if (Integer.parseInt(summary.group(2)) != 0 || status != 0) {
            return summary.group(2) + " " + NETTY_TESTS_FAILED + " (console launcher exit status " + status + ")";
        }
        if (Integer.parseInt(summary.group(1)) == 0) {
            return "no test passed";
        }
        return null;
    }

    /** A server JVM and a client JVM; null when both exited 0 and ran on the requested provider. */
    private String runPair(String serverName, Class<?> serverMain, List<String> serverArgs,
                           String clientName, Class<?> clientMain, List<String> clientArgs, String heap)
            throws IOException, InterruptedException {
        Child server = start(serverName, serverMain.getName(), Collections.singletonList(heap), serverArgs);
        int port;
        try {
            port = server.ready.get(Math.min(60, timeoutSeconds), TimeUnit.SECONDS);
        } catch (ExecutionException | TimeoutException e) {
            return serverName + " did not report READY: " + e;
        }
        List<String> args = new ArrayList<>();
        args.add(Integer.toString(port));
        args.addAll(clientArgs);
        Child client = start(clientName, clientMain.getName(), Collections.singletonList(heap), args);
        Integer clientStatus = client.waitFor(deadlineNanos);
        server.stop();
        Integer serverStatus = server.waitFor(Math.min(deadlineNanos, System.nanoTime() + TimeUnit.SECONDS.toNanos(30)));
        List<String> problems = new ArrayList<>();
        if (clientStatus == null) {
            problems.add(clientName + " timed out (thread dump in " + client.log + ")");
        } else if (clientStatus != 0) {
            problems.add(clientName + " exited with status " + clientStatus);
        }
        if (serverStatus == null) {
            problems.add(serverName + " did not stop (thread dump in " + server.log + ")");
        } else if (serverStatus != 0) {
            problems.add(serverName + " exited with status " + serverStatus);
        }
        for (Child child : Arrays.asList(server, client)) {
            String problem = child.providerProblem();
            if (problem != null) {
                problems.add(problem);
            }
        }
        return problems.isEmpty() ? null : String.join("; ", problems);
    }

    private Child start(String name, String mainClass, List<String> jvmArgs, List<String> args) throws IOException {
        List<String> command = new ArrayList<>();
        command.add(Paths.get(System.getProperty("java.home"), "bin", "java").toString());
        command.addAll(jvmArgs);
        if ("hadronio".equals(provider)) {
            command.add("-Djava.nio.channels.spi.SelectorProvider=" + HADRONIO_PROVIDER);
        }
        command.addAll(options.getOrDefault("child-jvm-arg", Collections.emptyList()));
        // The child's own backstop, should the supervisor die without killing it.
        command.add("-D" + CompatChild.DEADLINE_PROPERTY + "=" + deadlineMillis);
        command.add("-cp");
        command.add(System.getProperty("java.class.path"));
        command.add(mainClass);
        command.addAll(args);
        Child child = new Child(name, command, workDir.resolve(name + ".log"));
        children.add(child);
        return child;
    }

    /** The last line of {@code file} containing {@code marker} (netty logs each test combination it starts). */
    private static String lastLine(Path file, String marker) {
        String last = "no '" + marker + "' line in " + file;
        try (BufferedReader in = Files.newBufferedReader(file, StandardCharsets.UTF_8)) {
            String line;
            while ((line = in.readLine()) != null) {
                if (line.contains(marker)) {
                    last = "last test started: " + line.substring(line.indexOf(marker) + marker.length());
                }
            }
        } catch (IOException e) {
            return "cannot read " + file + ": " + e;
        }
        return last;
    }

    private String option(String name, String fallback) {
        List<String> values = options.get(name);
        if (values == null || values.isEmpty()) {
            if (fallback == null) {
                throw new IllegalArgumentException("missing option --" + name);
            }
            return fallback;
        }
        return values.get(values.size() - 1);
    }

    private static void sleepUntil(long nanos) {
        long left;
        while ((left = nanos - System.nanoTime()) > 0) {
            try {
                TimeUnit.NANOSECONDS.sleep(Math.min(left, TimeUnit.SECONDS.toNanos(1)));
            } catch (InterruptedException e) {
                return;
            }
        }
    }

    /** One child JVM with its output pump. */
    private final class Child {
        final String name;
        final Path log;
        final Process process;
        final CompletableFuture<Integer> ready = new CompletableFuture<>();
        private final List<String> summaryLines = new CopyOnWriteArrayList<>();
        /** Test classes the netty summary listener reported a failure in. */
        final Set<String> failedClasses = new ConcurrentSkipListSet<>();
        private final Thread pump;
        private volatile String reportedProvider;
        /** The netty log of a testsuite run (null for other children). */
        volatile Path nettyLog;

        Child(String name, List<String> command, Path log) throws IOException {
            this.name = name;
            this.log = log;
            this.process = new ProcessBuilder(command).redirectErrorStream(true).start();
            this.pump = CompatChild.daemon("compat-pump-" + name, this::pump);
        }

        private void pump() {
            try (BufferedReader in = new BufferedReader(
                    new InputStreamReader(process.getInputStream(), StandardCharsets.UTF_8));
                 BufferedWriter out = Files.newBufferedWriter(log, StandardCharsets.UTF_8)) {
                String line;
                while ((line = in.readLine()) != null) {
                    out.write(line);
                    out.newLine();
                    System.out.println("[" + name + "] " + line);
                    if (line.startsWith(CompatChild.PROVIDER_LINE)) {
                        reportedProvider = line.substring(CompatChild.PROVIDER_LINE.length()).trim();
                    }
                    Matcher ready = READY.matcher(line);
                    if (ready.matches()) {
                        this.ready.complete(Integer.valueOf(ready.group(1)));
                    }
                    if (line.startsWith(NettySummaryListener.SUMMARY_PREFIX)) {
                        summaryLines.add(line);
                    }
                    Matcher failure = NETTY_FAILURE.matcher(line);
                    if (failure.lookingAt()) {
                        failedClasses.add(failure.group(1));
                    }
                }
            } catch (IOException e) {
                System.out.println("[" + name + "] output lost: " + e);
            } finally {
                ready.completeExceptionally(new IOException(name + " ended its output without READY"));
            }
        }

        /** Exit status, or null if the child still runs at {@code untilNanos}. Waits for its output too. */
        Integer waitFor(long untilNanos) throws InterruptedException {
            if (!process.waitFor(Math.max(0, untilNanos - System.nanoTime()), TimeUnit.NANOSECONDS)) {
                return null;
            }
            pump.join(10_000);
            return process.exitValue();
        }

        /** The graceful stop signal of the servers: end of their standard input. */
        void stop() {
            try {
                OutputStream stdin = process.getOutputStream();
                stdin.close();
            } catch (IOException e) {
                // already gone
            }
        }

        Matcher find(Pattern pattern) {
            for (String line : summaryLines) {
                Matcher matcher = pattern.matcher(line);
                if (matcher.matches()) {
                    return matcher;
                }
            }
            return null;
        }

        /** Null when the child reported the provider the scenario asked for. */
        String providerProblem() {
            String actual = reportedProvider;
            if (actual == null) {
                return name + " never reported its SelectorProvider";
            }
            boolean ok = "hadronio".equals(provider) ? HADRONIO_PROVIDER.equals(actual) : !actual.startsWith("dev.hadronio.");
            return ok ? null : name + " ran on SelectorProvider " + actual + ", not the " + provider + " provider";
        }

        void killWithThreadDump() {
            if (!process.isAlive()) {
                return;
            }
            System.out.println("[" + name + "] still running: thread dump, then kill");
            try {
                Process quit = new ProcessBuilder("kill", "-QUIT", Long.toString(process.pid())).start();
                quit.waitFor(5, TimeUnit.SECONDS);
                process.waitFor(3, TimeUnit.SECONDS);
            } catch (IOException e) {
                System.out.println("[" + name + "] no thread dump: " + e);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
            destroy();
            try {
                process.waitFor(10, TimeUnit.SECONDS);
                pump.join(5_000);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }

        void destroy() {
            process.descendants().forEach(ProcessHandle::destroyForcibly);
            process.destroyForcibly();
        }
    }

    /**
     * A loopback listener whose accept queue is full: Linux drops further SYNs, so a connect to it times
     * out just like a connect to an unroutable host, without any packet leaving the machine.
     */
    private static final class Blackhole implements Closeable {
        private final ServerSocket listener;
        private final List<Socket> fillers = new ArrayList<>();
        private boolean works;

        private Blackhole() throws IOException {
            listener = new ServerSocket();
            listener.bind(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), 1);
        }

        static Blackhole open() throws IOException {
            Blackhole blackhole = new Blackhole();
            for (int i = 0; i < 64 && !blackhole.works; i++) {
                Socket socket = new Socket();
                try {
                    socket.connect(blackhole.listener.getLocalSocketAddress(), 500);
                    blackhole.fillers.add(socket);
                } catch (SocketTimeoutException e) {
                    blackhole.works = true;
                    socket.close();
                }
            }
            return blackhole;
        }

        int port() {
            return listener.getLocalPort();
        }

        boolean works() {
            return works;
        }

        @Override
        public void close() throws IOException {
            for (Socket socket : fillers) {
                socket.close();
            }
            listener.close();
        }
    }
}
