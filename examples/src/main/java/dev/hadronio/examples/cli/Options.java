package dev.hadronio.examples.cli;

import dev.hadronio.examples.transport.Flavour;

import java.net.InetSocketAddress;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashSet;
import java.util.List;
import java.util.Locale;

/**
 * The parsed command line of a peer, bench or demo command: {@code hadronio <mode> <command> [options]}. Immutable;
 * {@link Cli} builds it and rejects anything it does not understand, naming the offending word.
 */
public final class Options {

    /** What the program does, chosen by the first one or two (three for benchmarks) words. */
    public enum Command {
        BLOCKING_COUNTER("blocking counter"),
        BLOCKING_THROUGHPUT("blocking benchmark throughput"),
        BLOCKING_LATENCY("blocking benchmark latency"),
        NETTY_HELLO("netty hello"),
        NETTY_ECHO("netty echo"),
        NETTY_THROUGHPUT("netty benchmark throughput"),
        NETTY_LATENCY("netty benchmark latency"),
        BENCH("bench"),
        BENCH_COMPARE("bench compare"),
        BENCH_SELECTOR("bench selector"),
        BENCH_THREADS("bench threads"),
        BENCH_SCALE("bench scale"),
        DEMO("demo");

        private final String words;

        Command(String words) {
            this.words = words;
        }

        public String words() {
            return words;
        }

        /** True for the commands that run as a server or client pair. */
        public boolean isPeer() {
            return this != BENCH_COMPARE && this != BENCH_SELECTOR && this != BENCH_THREADS && this != BENCH_SCALE && this != DEMO;
        }
    }

    public static final int DEFAULT_PORT = 2998;
    public static final String DEFAULT_ADDRESS = "0.0.0.0:" + DEFAULT_PORT;
    public static final int DEFAULT_MESSAGES = 100_000;
    public static final int DEFAULT_LENGTH = 64;
    public static final int DEFAULT_THRESHOLD = 1;
    public static final int DEFAULT_CONNECTIONS = 1;
    public static final int DEFAULT_THREADS = 1;
    public static final int MIN_COUNTER_LENGTH = Long.BYTES;

    private final Command command;
    private final boolean server;
    private final InetSocketAddress remote;
    private final InetSocketAddress address;
    private final boolean addressGiven;
    private final int messages;
    private final int length;
    private final int threshold;
    private final int connections;
    private final int threads;
    private final boolean threadsGiven;
    private final Path file;
    private final Path output;
    private final Flavour flavour;
    private final List<Flavour> flavours;
    private final String name;
    private final Path perftest;
    private final List<Integer> counts;
    private final int seconds;
    private final int warmUpMax;

    private Options(Builder b) {
        command = b.command;
        server = b.server;
        remote = b.remote;
        address = b.address;
        addressGiven = b.addressGiven;
        messages = b.messages;
        length = b.length;
        threshold = b.threshold;
        connections = b.connections;
        threads = b.threads;
        threadsGiven = b.threadsGiven;
        file = b.file;
        output = b.output;
        flavour = b.flavour;
        flavours = Collections.unmodifiableList(new ArrayList<>(b.flavours));
        name = b.name;
        perftest = b.perftest;
        counts = Collections.unmodifiableList(new ArrayList<>(b.counts));
        seconds = b.seconds;
        warmUpMax = b.warmUpMax;
    }

    /** Connection counts to measure at ({@code bench scale}). */
    public List<Integer> counts() {
        return counts;
    }

    /** Seconds of measurement per step ({@code bench scale}). */
    public int seconds() {
        return seconds;
    }

    /** Most warm-up seconds per step ({@code bench scale}). */
    public int warmUpMax() {
        return warmUpMax;
    }

    public Command command() {
        return command;
    }

    public boolean isServer() {
        return server;
    }

    /** The server to connect to; null on the server side. */
    public InetSocketAddress remote() {
        return remote;
    }

    /** The local address: where a server listens (default {@value #DEFAULT_ADDRESS}). */
    public InetSocketAddress address() {
        return address;
    }

    public boolean addressGiven() {
        return addressGiven;
    }

    public int messages() {
        return messages;
    }

    public int length() {
        return length;
    }

    public int threshold() {
        return threshold;
    }

    public int connections() {
        return connections;
    }

    public int threads() {
        return threads;
    }

    public boolean threadsGiven() {
        return threadsGiven;
    }

    /** The run description (bench); null if not given. */
    public Path file() {
        return file;
    }

    /** The result directory (bench, demo); null if not given. */
    public Path output() {
        return output;
    }

    /** The transport flavour override (bench); null if not given. */
    public Flavour flavour() {
        return flavour;
    }

    /** The flavours to compare (bench compare, demo); empty if not given. */
    public List<Flavour> flavours() {
        return flavours;
    }

    /** The result name override (bench); null if not given. */
    public String name() {
        return name;
    }

    /** Path of ucx_perftest (bench compare, demo, bench scale); null if not given. */
    public Path perftest() {
        return perftest;
    }

    /** Formats a flavour list as given on the command line. */
    public static String describe(List<Flavour> flavours) {
        List<String> names = new ArrayList<>();
        for (Flavour f : flavours) {
            names.add(f.name().toLowerCase(Locale.ROOT));
        }
        return String.join(",", names);
    }

    /** The options being collected for one command; {@link Cli} fills it in. */
    static final class Builder {
        final Command command;
        boolean server;
        InetSocketAddress remote;
        InetSocketAddress address = new InetSocketAddress("0.0.0.0", DEFAULT_PORT);
        boolean addressGiven;
        int messages = DEFAULT_MESSAGES;
        int length = DEFAULT_LENGTH;
        int threshold = DEFAULT_THRESHOLD;
        int connections = DEFAULT_CONNECTIONS;
        int threads = DEFAULT_THREADS;
        boolean threadsGiven;
        Path file;
        Path output;
        Flavour flavour;
        final List<Flavour> flavours = new ArrayList<>();
        String name;
        Path perftest;
        final List<Integer> counts = new ArrayList<>();
        int seconds;
        int warmUpMax;

        Builder(Command command) {
            this.command = command;
        }

        /** The local address given with {@code -a}; null leaves the default. */
        void address(InetSocketAddress given) {
            if (given != null) {
                address = given;
                addressGiven = true;
            }
        }

        /** What makes these options unusable together, or null. */
        String problem() {
            if (command.isPeer() && !server && remote == null) {
                return "'" + command.words() + "' needs -s/--server (to listen) or -r/--remote host:port (to connect)";
            }
            if (command == Command.BLOCKING_COUNTER && length < MIN_COUNTER_LENGTH) {
                return "option -l/--length must be at least " + MIN_COUNTER_LENGTH
                        + " for 'blocking counter' (the counter is a long), got " + length;
            }
            if ((command == Command.BENCH || command == Command.BENCH_COMPARE) && file == null) {
                return "'" + command.words() + "' needs -f/--file <run description JSON>";
            }
            if (new HashSet<>(flavours).size() < flavours.size()) {
                return "option --flavours lists a flavour twice: " + describe(flavours);
            }
            return null;
        }

        Options build() {
            return new Options(this);
        }
    }
}
