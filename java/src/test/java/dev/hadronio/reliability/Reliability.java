package dev.hadronio.reliability;

import java.io.File;
import java.io.IOException;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.nio.channels.spi.SelectorProvider;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.StandardOpenOption;
import java.time.Instant;
import java.util.List;
import java.util.Locale;

/**
 * Shared pieces of the reliability tests: the providers and the figures they report.
 *
 * <p><b>Figures.</b> {@link #figure} prints a line
 * {@code RELIABILITY-FIGURE <test> | <name> = <value> <unit>} on stdout (Gradle shows it
 * with {@code --info}) and appends the same line to {@code build/reliability/figures.txt} (relative
 * to the working directory, which is {@code java/} under Gradle) or to the file named by
 * {@code -Dhadronio.reliability.figures}.
 */
public final class Reliability {
    /** Class name of our provider. */
    public static final String HADRONIO_PROVIDER = "dev.hadronio.HadronioProvider";

    private static final Object FIGURES_LOCK = new Object();

    private Reliability() {
    }

    /** Where figures go. */
    public static File figuresFile() {
        String configured = System.getProperty("hadronio.reliability.figures");
        if (configured != null && !configured.isEmpty()) {
            return new File(configured);
        }
        return new File("build" + File.separator + "reliability" + File.separator + "figures.txt");
    }

    /** Prints and records one measured figure. */
    public static void figure(String test, String name, Object value, String unit) {
        String text;
        if (value instanceof Double || value instanceof Float) {
            text = String.format(Locale.ROOT, "%.3f", ((Number) value).doubleValue());
        } else {
            text = String.valueOf(value);
        }
        String line = "RELIABILITY-FIGURE " + test + " | " + name + " = " + text
                + (unit.isEmpty() ? "" : " " + unit);
        System.out.println(line);
        synchronized (FIGURES_LOCK) {
            File file = figuresFile();
            File parent = file.getAbsoluteFile().getParentFile();
            try {
                if (parent != null) {
                    Files.createDirectories(parent.toPath());
                }
                Files.write(file.toPath(), (Instant.now() + " " + line + "\n").getBytes(StandardCharsets.UTF_8),
                        StandardOpenOption.CREATE, StandardOpenOption.APPEND, StandardOpenOption.WRITE);
            } catch (IOException e) {
                System.out.println("(could not write " + file + ": " + e + ")");
            }
        }
    }

    /**
     * Accepts one connection from {@code peer} within {@code seconds} (polling a non-blocking accept, so
     * that a peer that never connects fails the test with its output instead of hanging it); the
     * accepted channel is in blocking mode.
     */
    public static SocketChannel acceptWithin(ServerSocketChannel server, ChildJvm peer, int seconds)
            throws IOException, InterruptedException {
        server.configureBlocking(false);
        long deadline = System.nanoTime() + seconds * 1_000_000_000L;
        while (System.nanoTime() < deadline) {
            SocketChannel accepted = server.accept();
            if (accepted != null) {
                accepted.configureBlocking(true);
                return accepted;
            }
            Thread.sleep(5);
        }
        throw new AssertionError("no connection from the peer within " + seconds + " s\n" + peer.output());
    }

    // --- the providers -------------------------------------------------------------------------

    /** How the survivor, writer or churning client uses its channels. */
    public enum Mode { BLOCKING, SELECTOR }

    /** The provider under test in a parameterized test. */
    public enum Provider {
        JDK, HADRONIO;

        /** An instance: the JDK's default provider, or the one shared hadroNIO provider. */
        public SelectorProvider get() {
            return this == JDK ? SelectorProvider.provider() : HadronioHolder.INSTANCE;
        }

        /** JVM arguments that make a child JVM use this provider JVM-wide. */
        public void addJvmArguments(List<String> command) {
            if (this == HADRONIO) {
                command.add("-Djava.nio.channels.spi.SelectorProvider=" + HADRONIO_PROVIDER);
            }
        }

        @Override
        public String toString() {
            return name().toLowerCase(Locale.ROOT);
        }
    }

    private static final class HadronioHolder {
        static final SelectorProvider INSTANCE = new dev.hadronio.HadronioProvider();
    }
}
