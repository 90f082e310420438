package dev.hadronio.examples.compare;

import dev.hadronio.examples.Main;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.InterruptedIOException;
import java.io.PrintStream;
import java.io.PrintWriter;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.TimeUnit;

/**
 * Runs one bench server and one bench client as child JVMs of this same application (java from
 * {@code java.home}, the same class path), for one provider and flavour. The server's step lines are relayed to
 * the console; everything both children print goes to log files. A run that prints nothing for
 * {@link #SILENCE_LIMIT_SECONDS} is considered hung and killed.
 */
final class ChildRun {

    static final long SILENCE_LIMIT_SECONDS = 300;
    private static final String PROVIDER_PREFIX = "SelectorProvider: ";

    /** How a run ended. */
    static final class Outcome {
        final boolean ok;
        final String providerClass;
        final double seconds;
        final String problem;

        Outcome(boolean ok, String providerClass, double seconds, String problem) {
            this.ok = ok;
            this.providerClass = providerClass;
            this.seconds = seconds;
            this.problem = problem;
        }
    }

    private final Provider provider;
    private final String label;
    private final List<String> benchArguments;
    private final Path logs;
    private final PrintStream out;
    private volatile String providerClass;
    private volatile long lastOutput;

    ChildRun(Provider provider, String label, List<String> benchArguments, Path logs, PrintStream out) {
        this.provider = provider;
        this.label = label;
        this.benchArguments = benchArguments;
        this.logs = logs;
        this.out = out;
    }

    /** The command line of a child JVM running {@code hadronio <arguments>} with this run's provider. */
    List<String> command(List<String> arguments) {
        List<String> cmd = new ArrayList<>();
        cmd.add(Paths.get(System.getProperty("java.home"), "bin", "java").toString());
        for (String name : System.getProperties().stringPropertyNames()) {
            if (name.startsWith("hadronio.")) {
                cmd.add("-D" + name + "=" + System.getProperty(name));
            }
        }
        String option = provider.jvmOption();
        if (option != null) {
            cmd.add(option);
        }
        cmd.add("-cp");
        cmd.add(System.getProperty("java.class.path"));
        cmd.add(Main.class.getName());
        cmd.addAll(arguments);
        return cmd;
    }

    Outcome run(InetSocketAddress server) throws IOException {
        Files.createDirectories(logs);
        String file = label.replace(' ', '-').toLowerCase(Locale.ROOT);
        Path serverLog = logs.resolve(file + "-server.log");
        Path clientLog = logs.resolve(file + "-client.log");
        String address = server.getHostString() + ":" + server.getPort();

        List<String> serverArgs = new ArrayList<>(List.of("bench", "-s", "-a", address, "--name", label));
        serverArgs.addAll(benchArguments);
        List<String> clientArgs = new ArrayList<>(List.of("bench", "-r", address));
        clientArgs.addAll(benchArguments);
        List<String> clientCommand = command(withoutOutput(clientArgs));

        long start = System.nanoTime();
        lastOutput = start;
        Process serverProcess = start(command(serverArgs), null);
        Process clientProcess = null;
        Thread relay = relay(serverProcess, serverLog);
        try {
            clientProcess = start(clientCommand, clientLog);
            while (serverProcess.isAlive() || clientProcess.isAlive()) {
                if (System.nanoTime() - lastOutput > TimeUnit.SECONDS.toNanos(SILENCE_LIMIT_SECONDS)) {
                    return failed(start, "no output for " + SILENCE_LIMIT_SECONDS + " s, killed", serverLog,
                            clientLog);
                }
                if (!serverProcess.isAlive() && serverProcess.exitValue() != 0
                        || !clientProcess.isAlive() && clientProcess.exitValue() != 0) {
                    break; // one side failed; the other may wait forever
                }
                serverProcess.waitFor(200, TimeUnit.MILLISECONDS);
            }
            if (serverProcess.isAlive() || clientProcess.isAlive()) {
                return failed(start, exitText("server", serverProcess) + ", " + exitText("client", clientProcess),
                        serverLog, clientLog);
            }
            relay.join(TimeUnit.SECONDS.toMillis(5));
            if (serverProcess.exitValue() != 0 || clientProcess.exitValue() != 0) {
                return failed(start, exitText("server", serverProcess) + ", " + exitText("client", clientProcess),
                        serverLog, clientLog);
            }
            return new Outcome(true, providerClass, seconds(start), null);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new InterruptedIOException("interrupted while running " + label);
        } finally {
            serverProcess.destroyForcibly();
            if (clientProcess != null) {
                clientProcess.destroyForcibly();
            }
        }
    }

    /** The client writes no results: drop the server-only options. */
    private static List<String> withoutOutput(List<String> args) {
        List<String> result = new ArrayList<>();
        for (int i = 0; i < args.size(); i++) {
            if (args.get(i).equals("-o")) {
                i++;
                continue;
            }
            result.add(args.get(i));
        }
        return result;
    }

    private Process start(List<String> command, Path log) throws IOException {
        ProcessBuilder pb = new ProcessBuilder(command).redirectErrorStream(true);
        provider.configure(pb.environment());
        if (log != null) {
            pb.redirectOutput(log.toFile());
        }
        return pb.start();
    }

    private Thread relay(Process process, Path log) {
        Thread t = new Thread(() -> {
            try (BufferedReader r = new BufferedReader(new InputStreamReader(process.getInputStream(),
                    StandardCharsets.UTF_8));
                 PrintWriter w = new PrintWriter(Files.newBufferedWriter(log, StandardCharsets.UTF_8), true)) {
                String line;
                while ((line = r.readLine()) != null) {
                    lastOutput = System.nanoTime();
                    w.println(line);
                    if (line.startsWith(PROVIDER_PREFIX)) {
                        providerClass = line.substring(PROVIDER_PREFIX.length()).trim();
                        out.println("  " + label + ": running on " + providerClass);
                    } else if (line.startsWith("Path: ")) {
                        out.println("  " + label + ": connection path " + line.substring(6).trim());
                    } else if (line.startsWith("[") || line.startsWith("  [") || line.startsWith("hadronio:")) {
                        out.println("  " + label + " " + line.trim());
                    }
                }
            } catch (IOException e) {
                out.println("  " + label + ": lost the server's output: " + e.getMessage());
            }
        }, "relay-" + label);
        t.setDaemon(true);
        t.start();
        return t;
    }

    private Outcome failed(long start, String problem, Path serverLog, Path clientLog) {
        StringBuilder b = new StringBuilder(problem);
        appendTail(b, "server", serverLog);
        appendTail(b, "client", clientLog);
        return new Outcome(false, providerClass, seconds(start), b.toString());
    }

    private static void appendTail(StringBuilder b, String side, Path log) {
        try {
            List<String> lines = Files.readAllLines(log, StandardCharsets.UTF_8);
            b.append(System.lineSeparator()).append("    last lines of the ").append(side).append(" log (")
                    .append(log).append("):");
            for (String line : lines.subList(Math.max(0, lines.size() - 6), lines.size())) {
                b.append(System.lineSeparator()).append("      ").append(line);
            }
        } catch (IOException e) {
            b.append(System.lineSeparator()).append("    (no ").append(side).append(" log: ").append(e.getMessage())
                    .append(')');
        }
    }

    private static String exitText(String side, Process p) {
        return p.isAlive() ? side + " still running" : side + " exited with " + p.exitValue();
    }

    private static double seconds(long start) {
        return (System.nanoTime() - start) / 1e9;
    }
}
