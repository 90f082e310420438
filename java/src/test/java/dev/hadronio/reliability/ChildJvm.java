package dev.hadronio.reliability;

import java.io.BufferedReader;
import java.io.File;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.function.Predicate;

/**
 * A child JVM started with this JVM's {@code java} and class path, whose merged stdout and stderr
 * (or stdout alone, see {@link Builder#stderrTo}) are collected line by line (each line stamped
 * with its arrival time) by a daemon thread. {@link #close()} kills it ({@code destroyForcibly}, SIGKILL) if it still runs; every wait is
 * bounded.
 */
public final class ChildJvm implements AutoCloseable {
    /** One output line and when it arrived ({@link System#nanoTime()}). */
    public static final class Line {
        public final String text;
        public final long nanos;

        Line(String text, long nanos) {
            this.text = text;
            this.nanos = nanos;
        }

        @Override
        public String toString() {
            return text;
        }
    }

    /** What to start. */
    public static final class Builder {
        private final String name;
        private final String mainClass;
        private final List<String> prefix = new ArrayList<>();
        private final List<String> jvmArguments = new ArrayList<>();
        private final List<String> arguments = new ArrayList<>();
        private final Map<String, String> environment = new HashMap<>();
        private Reliability.Provider provider = Reliability.Provider.HADRONIO;
        private File stderr;

        public Builder(String name, Class<?> mainClass) {
            this.name = name;
            this.mainClass = mainClass.getName();
        }

        /** Runs the JVM through a command prefix, e.g. {@code ip netns exec NAME}. */
        public Builder prefix(String... words) {
            prefix.addAll(List.of(words));
            return this;
        }

        public Builder provider(Reliability.Provider value) {
            provider = value;
            return this;
        }

        public Builder jvm(String... values) {
            jvmArguments.addAll(List.of(values));
            return this;
        }

        public Builder args(Object... values) {
            for (Object value : values) {
                arguments.add(String.valueOf(value));
            }
            return this;
        }

        /** Sends the child's standard error to {@code file} instead of merging it into the lines. */
        public Builder stderrTo(File file) {
            stderr = file;
            return this;
        }

        public Builder env(String key, String value) {
            environment.put(key, value);
            return this;
        }

        public ChildJvm start() throws IOException {
            List<String> command = new ArrayList<>(prefix);
            command.add(System.getProperty("java.home") + File.separator + "bin" + File.separator + "java");
            command.add("-cp");
            command.add(System.getProperty("java.class.path"));
            provider.addJvmArguments(command);
            for (Map.Entry<Object, Object> property : System.getProperties().entrySet()) {
                String key = property.getKey().toString();
                if (key.startsWith("hadronio.") && !key.startsWith("hadronio.reliability.")
                        && !key.startsWith("hadronio.test.") && !key.startsWith("hadronio.conformance.")) {
                    command.add("-D" + key + "=" + property.getValue());
                }
            }
            command.add("-XX:-UsePerfData");
            command.addAll(jvmArguments);
            command.add(mainClass);
            command.addAll(arguments);
            ProcessBuilder builder = new ProcessBuilder(command);
            if (stderr == null) {
                builder.redirectErrorStream(true);
            } else {
                builder.redirectError(stderr);
            }
            builder.environment().putAll(environment);
            return new ChildJvm(name, builder.start(), command);
        }
    }

    /**
     * Another program as a child (a plain peer written in Python, say), collected and killed in
     * the same way.
     */
    public static ChildJvm startProgram(String name, List<String> command) throws IOException {
        ProcessBuilder builder = new ProcessBuilder(command).redirectErrorStream(true);
        return new ChildJvm(name, builder.start(), command);
    }

    private final String name;
    private final Process process;
    private final List<String> command;
    private final List<Line> lines = new ArrayList<>();
    private final Thread collector;

    private ChildJvm(String name, Process process, List<String> command) {
        this.name = name;
        this.process = process;
        this.command = command;
        this.collector = new Thread(this::collect, "child-output-" + name);
        collector.setDaemon(true);
        collector.start();
    }

    private void collect() {
        try (BufferedReader reader = new BufferedReader(
                new InputStreamReader(process.getInputStream(), StandardCharsets.UTF_8))) {
            for (String line = reader.readLine(); line != null; line = reader.readLine()) {
                long now = System.nanoTime();
                synchronized (lines) {
                    lines.add(new Line(line, now));
                    lines.notifyAll();
                }
            }
        } catch (IOException e) {
            synchronized (lines) {
                lines.add(new Line("(output collector: " + e + ")", System.nanoTime()));
            }
        } finally {
            synchronized (lines) {
                lines.notifyAll();
            }
        }
    }

    public String name() {
        return name;
    }

    public Process process() {
        return process;
    }

    public long pid() {
        return process.pid();
    }

    public boolean isAlive() {
        return process.isAlive();
    }

    /** Writes a line to the child's stdin. */
    public void send(String line) throws IOException {
        OutputStream in = process.getOutputStream();
        in.write((line + "\n").getBytes(StandardCharsets.UTF_8));
        in.flush();
    }

    /** A snapshot of the lines so far. */
    public List<Line> lines() {
        synchronized (lines) {
            return new ArrayList<>(lines);
        }
    }

    /** Everything printed so far, for failure messages. */
    public String output() {
        StringBuilder text = new StringBuilder("--- output of the ").append(name).append(" process (")
                .append(String.join(" ", command.subList(Math.max(0, command.size() - 12), command.size())))
                .append(") ---\n");
        synchronized (lines) {
            int from = Math.max(0, lines.size() - 300);
            if (from > 0) {
                text.append("(").append(from).append(" earlier lines omitted)\n");
            }
            for (Line line : lines.subList(from, lines.size())) {
                text.append(line.text).append('\n');
            }
        }
        if (!process.isAlive()) {
            text.append("--- exit status ").append(process.exitValue()).append(" ---\n");
        }
        return text.toString();
    }

    /** The first line matching, or null. */
    public Line find(Predicate<String> matcher) {
        synchronized (lines) {
            for (Line line : lines) {
                if (matcher.test(line.text)) {
                    return line;
                }
            }
        }
        return null;
    }

    /** The rest of the first line starting with {@code key + " "}, or null. */
    public String value(String key) {
        Line line = find(text -> text.startsWith(key + " "));
        return line == null ? null : line.text.substring(key.length() + 1).trim();
    }

    /** All lines starting with {@code key + " "}. */
    public List<Line> all(String key) {
        List<Line> found = new ArrayList<>();
        synchronized (lines) {
            for (Line line : lines) {
                if (line.text.startsWith(key + " ")) {
                    found.add(line);
                }
            }
        }
        return found;
    }

    /**
     * Waits up to {@code seconds} for a line matching; returns it, or null on timeout or if the child
     * exited without printing it.
     */
    public Line await(Predicate<String> matcher, double seconds) throws InterruptedException {
        return await(0, matcher, seconds);
    }

    /** {@link #await(Predicate, double)} among the lines from number {@code from} on ({@link #lines()}'s indexes). */
    public Line await(int from, Predicate<String> matcher, double seconds) throws InterruptedException {
        long deadline = System.nanoTime() + (long) (seconds * 1e9);
        synchronized (lines) {
            while (true) {
                for (Line line : lines.subList(Math.min(from, lines.size()), lines.size())) {
                    if (matcher.test(line.text)) {
                        return line;
                    }
                }
                long left = deadline - System.nanoTime();
                if (left <= 0 || (!process.isAlive() && !collector.isAlive())) {
                    return null;
                }
                lines.wait(Math.max(1, Math.min(100, left / 1_000_000)));
            }
        }
    }

    /** The rest of the first line starting with {@code key + " "}, waiting up to {@code seconds}; fails if none. */
    public String awaitValue(String key, double seconds) throws InterruptedException {
        Line line = await(text -> text.startsWith(key + " "), seconds);
        if (line == null) {
            throw new AssertionError("the " + name + " process printed no " + key + " line within " + seconds + " s\n"
                    + output());
        }
        return line.text.substring(key.length() + 1).trim();
    }

    /** Waits for the child to exit; returns its status, or fails after {@code seconds} (killing it). */
    public int awaitExit(double seconds) throws InterruptedException {
        if (!process.waitFor((long) (seconds * 1000), TimeUnit.MILLISECONDS)) {
            close();
            throw new AssertionError("the " + name + " process did not exit within " + seconds + " s\n" + output());
        }
        collector.join(5000);
        return process.exitValue();
    }

    /** Kills the child (SIGKILL) and waits a bounded time for it to be gone. */
    @Override
    public void close() {
        if (process.isAlive()) {
            process.destroyForcibly();
        }
        try {
            process.waitFor(10, TimeUnit.SECONDS);
            collector.join(2000);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    /** The body of a child program's {@code main}. */
    public interface Body {
        void run() throws Exception;
    }

    /**
     * Runs a child program: exits 0 after {@code body}, or prints {@code FAILED <exception>} and its
     * stack on stdout (where the test looks) and exits 1.
     */
    public static void runMain(Body body) {
        try {
            body.run();
            System.out.flush();
            System.exit(0);
        } catch (Throwable t) {
            System.out.println("FAILED " + t);
            t.printStackTrace(System.out);
            System.out.flush();
            System.exit(1);
        }
    }
}
