package dev.hadronio.examples.hosts;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.io.PrintWriter;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.SocketChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * {@code hadronio hosts child MODE}: a JVM the checks start for a fault they cannot play in their
 * own (one to kill, one on the other provider, one with other settings). It reports on standard
 * output in lines {@code PORT n}, {@code PATH p}, {@code ROUNDS n} and a last {@code RESULT ...}.
 *
 * <pre>
 * stream  connects to a sink and writes 64 KiB at a time until it is killed or a write fails
 * echo    echoes 16 KiB round trips with CRC-32 until its standard input says "stop"
 * path    makes a connection to an echo server, prints the path it took and exits
 * bench   measures against a server's first port (see {@link HostBench}), lines FIGURE name value
 * </pre>
 */
@SuppressWarnings("try") // close() of a child may throw InterruptedException: callers let it through
final class HostChild {
    private final PrintStream out;

    HostChild(PrintStream out) {
        this.out = out;
    }

    private void say(String line) {
        out.println(line);
        out.flush();
    }

    int run(String mode, InetSocketAddress remote) throws Exception {
        if (mode.equals("bench")) {
            return HostBench.measure(remote, out);
        }
        try (SocketChannel channel = SocketChannel.open(remote)) {
            say("PORT " + ((InetSocketAddress) channel.getLocalAddress()).getPort());
            switch (mode) {
                case "path":
                    say("PATH " + Echo.decide(channel));
                    return 0;
                case "stream":
                    return stream(channel);
                case "echo":
                    return echo(channel);
                default:
                    throw new IllegalArgumentException("unknown mode " + mode);
            }
        } catch (IOException e) {
            say("RESULT failed: " + e);
            return 1;
        }
    }

    private int stream(SocketChannel channel) throws IOException {
        ByteBuffer chunk = Echo.payload(64 * 1024, 7);
        boolean told = false;
        while (true) {
            chunk.clear();
            while (chunk.hasRemaining()) {
                channel.write(chunk);
            }
            String path = Hadronio.path(channel);
            if (!told && Hadronio.decided(path)) {
                say("PATH " + path);
                told = true;
            }
        }
    }

    private int echo(SocketChannel channel) throws Exception {
        say("PATH " + Echo.decide(channel));
        AtomicBoolean stop = new AtomicBoolean();
        Thread input = new Thread(() -> {
            try (BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8))) {
                String line;
                while ((line = in.readLine()) != null && !line.equals("stop")) {
                    // wait
                }
            } catch (IOException e) {
                // the parent went
            }
            stop.set(true);
        }, "hosts-child-input");
        input.setDaemon(true);
        input.start();
        long rounds = 0;
        try {
            while (!stop.get()) {
                EchoLoop.round(channel, rounds);
                if (++rounds % 10 == 0) {
                    say("ROUNDS " + rounds);
                }
            }
        } catch (Exception e) {
            say("RESULT failed after " + rounds + " rounds: " + e);
            return 1;
        }
        say("RESULT ok rounds=" + rounds + " path=" + Hadronio.path(channel));
        return 0;
    }

    /** A child JVM started by the checks, and what it reported. */
    static final class Process implements AutoCloseable {
        final java.lang.Process process;
        private final List<String> lines = new ArrayList<>();
        private final PrintWriter input;

        private Process(java.lang.Process process) {
            this.process = process;
            this.input = new PrintWriter(process.getOutputStream(), true, StandardCharsets.UTF_8);
            Thread reader = new Thread(() -> {
                try (BufferedReader in = new BufferedReader(new InputStreamReader(process.getInputStream(), StandardCharsets.UTF_8))) {
                    String line;
                    while ((line = in.readLine()) != null) {
                        synchronized (lines) {
                            lines.add(line);
                            lines.notifyAll();
                        }
                    }
                } catch (IOException e) {
                    // the child went
                }
            }, "hosts-child-output");
            reader.setDaemon(true);
            reader.start();
        }

        /**
         * Starts {@code hadronio hosts child MODE REMOTE} on hadroNIO (with this JVM's
         * {@code hadronio.*} settings, then {@code settings} over them) or on the JDK's provider,
         * with {@code environment} added.
         */
        static Process start(boolean hadronio, Map<String, String> settings, Map<String, String> environment, String mode,
                             InetSocketAddress remote) throws IOException {
            List<String> command = new ArrayList<>();
            command.add(Paths.get(System.getProperty("java.home"), "bin", "java").toString());
            if (hadronio) {
                command.add("-Djava.nio.channels.spi.SelectorProvider=" + Hadronio.PROVIDER);
                for (String name : System.getProperties().stringPropertyNames()) {
                    if (name.startsWith("hadronio.") && !settings.containsKey(name)) {
                        command.add("-D" + name + "=" + System.getProperty(name));
                    }
                }
                settings.forEach((name, value) -> command.add("-D" + name + "=" + value));
            }
            command.add("-cp");
            command.add(System.getProperty("java.class.path"));
            command.add("dev.hadronio.examples.Main");
            command.add("hosts");
            command.add("child");
            command.add(mode);
            command.add(remote.getAddress().getHostAddress() + ":" + remote.getPort());
            ProcessBuilder builder = new ProcessBuilder(command).redirectError(ProcessBuilder.Redirect.INHERIT);
            builder.environment().remove("DISABLE_HADRONIO");
            if (!hadronio) {
                builder.environment().put("DISABLE_HADRONIO", "true");
            }
            builder.environment().putAll(environment);
            return new Process(builder.start());
        }

        /** The value of the child's first line {@code KEY value}, waiting up to {@code seconds}. */
        String await(String key, long seconds) throws InterruptedException {
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(seconds);
            synchronized (lines) {
                while (true) {
                    for (String line : lines) {
                        if (line.startsWith(key + " ")) {
                            return line.substring(key.length() + 1);
                        }
                        if (line.startsWith("RESULT failed")) {
                            throw new IllegalStateException("the child JVM " + line.substring("RESULT ".length()));
                        }
                    }
                    long left = deadline - System.nanoTime();
                    if (left <= 0 || !process.isAlive() && lines.stream().noneMatch(l -> l.startsWith(key + " "))) {
                        if (!process.isAlive()) {
                            throw new IllegalStateException("the child JVM exited (" + process.exitValue() + ") without " + key
                                    + "; it said: " + String.join(" | ", lines));
                        }
                        throw new IllegalStateException("the child JVM did not report " + key + " within " + seconds + " s; it said: "
                                + String.join(" | ", lines));
                    }
                    lines.wait(Math.max(1, TimeUnit.NANOSECONDS.toMillis(left)));
                }
            }
        }

        /** The number in the child's last {@code ROUNDS n} line, 0 before the first. */
        long rounds() {
            synchronized (lines) {
                for (int i = lines.size() - 1; i >= 0; i--) {
                    if (lines.get(i).startsWith("ROUNDS ")) {
                        return Long.parseLong(lines.get(i).substring("ROUNDS ".length()));
                    }
                }
            }
            return 0;
        }

        void tell(String line) {
            input.println(line);
        }

        @Override
        public void close() throws InterruptedException {
            input.close();
            if (!process.waitFor(30, TimeUnit.SECONDS)) {
                process.destroyForcibly();
                process.waitFor();
            }
        }
    }
}
