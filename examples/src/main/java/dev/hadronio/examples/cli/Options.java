package dev.hadronio.examples.cli;

import dev.hadronio.examples.transport.Flavour;

import java.net.InetSocketAddress;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.Collections;
import java.util.EnumSet;
import java.util.List;
import java.util.Locale;
import java.util.Set;

/**
 * The parsed command line: {@code hadronio <mode> <command> [options]}. Immutable; {@link #parse} rejects anything
 * it does not understand with a {@link UsageException} naming the offending word.
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
            return this != BENCH_COMPARE && this != BENCH_SELECTOR && this != DEMO;
        }
    }

    /** Every option; each command accepts a subset. */
    enum Opt {
        SERVER("-s", "--server", false),
        REMOTE("-r", "--remote", true),
        ADDRESS("-a", "--address", true),
        MESSAGES("-m", "--messages", true),
        LENGTH("-l", "--length", true),
        THRESHOLD("-t", "--threshold", true),
        CONNECTIONS("-c", "--connections", true),
        THREADS(null, "--threads", true),
        FILE("-f", "--file", true),
        OUTPUT("-o", "--output", true),
        FLAVOUR(null, "--flavour", true),
        FLAVOURS(null, "--flavours", true),
        NAME(null, "--name", true),
        PERFTEST(null, "--perftest", true),
        HELP("-h", "--help", false);

        final String shortName;
        final String longName;
        final boolean takesValue;

        Opt(String shortName, String longName, boolean takesValue) {
            this.shortName = shortName;
            this.longName = longName;
            this.takesValue = takesValue;
        }

        String display() {
            return shortName == null ? longName : shortName + "/" + longName;
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

    /** Path of ucx_perftest (bench compare, demo); null if not given. */
    public Path perftest() {
        return perftest;
    }

    /** Parses a command line; never returns null. */
    public static Options parse(String... args) throws UsageException {
        Builder b = new Builder();
        int i = parseCommand(args, b);
        Set<Opt> allowed = allowedOptions(b.command);
        Set<Opt> seen = EnumSet.noneOf(Opt.class);
        for (; i < args.length; i++) {
            String arg = args[i];
            String value = null;
            String key = arg;
            int eq = arg.indexOf('=');
            if (arg.startsWith("--") && eq > 0) {
                key = arg.substring(0, eq);
                value = arg.substring(eq + 1);
            }
            Opt opt = lookup(key);
            if (opt == null) {
                throw new UsageException(arg.startsWith("-")
                        ? "unknown option '" + arg + "'"
                        : "unexpected argument '" + arg + "'");
            }
            if (opt == Opt.HELP) {
                throw UsageException.help();
            }
            if (!allowed.contains(opt)) {
                throw new UsageException("option " + opt.display() + " does not apply to '" + b.command.words() + "'");
            }
            if (!seen.add(opt)) {
                throw new UsageException("option " + opt.display() + " given twice");
            }
            if (opt.takesValue && value == null) {
                if (i + 1 >= args.length) {
                    throw new UsageException("option " + opt.display() + " needs a value");
                }
                value = args[++i];
            } else if (!opt.takesValue && value != null) {
                throw new UsageException("option " + opt.display() + " takes no value");
            }
            apply(b, opt, value);
        }
        validate(b, seen);
        return new Options(b);
    }

    private static int parseCommand(String[] args, Builder b) throws UsageException {
        if (args.length == 0) {
            throw new UsageException("missing mode (blocking, netty, bench or demo)");
        }
        String mode = args[0];
        if (mode.equals("-h") || mode.equals("--help") || mode.equals("help")) {
            throw UsageException.help();
        }
        String second = args.length > 1 ? args[1] : null;
        switch (mode) {
            case "blocking":
                if ("counter".equals(second)) {
                    b.command = Command.BLOCKING_COUNTER;
                    return 2;
                }
                if ("benchmark".equals(second)) {
                    return parseBenchmarkKind(args, b, Command.BLOCKING_THROUGHPUT, Command.BLOCKING_LATENCY);
                }
                throw new UsageException(missingOrUnknown("blocking", second, "counter, benchmark"));
            case "netty":
                if ("hello".equals(second)) {
                    b.command = Command.NETTY_HELLO;
                    return 2;
                }
                if ("echo".equals(second)) {
                    b.command = Command.NETTY_ECHO;
                    return 2;
                }
                if ("benchmark".equals(second)) {
                    return parseBenchmarkKind(args, b, Command.NETTY_THROUGHPUT, Command.NETTY_LATENCY);
                }
                throw new UsageException(missingOrUnknown("netty", second, "hello, echo, benchmark"));
            case "bench":
                if ("compare".equals(second)) {
                    b.command = Command.BENCH_COMPARE;
                    return 2;
                }
                if ("selector".equals(second)) {
                    b.command = Command.BENCH_SELECTOR;
                    return 2;
                }
                b.command = Command.BENCH;
                return 1;
            case "demo":
                b.command = Command.DEMO;
                return 1;
            default:
                throw new UsageException("unknown mode '" + mode + "' (expected blocking, netty, bench or demo)");
        }
    }

    private static int parseBenchmarkKind(String[] args, Builder b, Command throughput, Command latency)
            throws UsageException {
        String kind = args.length > 2 ? args[2] : null;
        if ("throughput".equals(kind)) {
            b.command = throughput;
        } else if ("latency".equals(kind)) {
            b.command = latency;
        } else {
            throw new UsageException(missingOrUnknown(args[0] + " benchmark", kind, "throughput, latency"));
        }
        return 3;
    }

    private static String missingOrUnknown(String context, String word, String expected) {
        if (word == null || word.startsWith("-")) {
            return "'" + context + "' needs a command (" + expected + ")";
        }
        return "unknown command '" + word + "' for '" + context + "' (expected " + expected + ")";
    }

    private static Opt lookup(String key) {
        for (Opt opt : Opt.values()) {
            if (key.equals(opt.shortName) || key.equals(opt.longName)) {
                return opt;
            }
        }
        return null;
    }

    static Set<Opt> allowedOptions(Command command) {
        Set<Opt> peer = EnumSet.of(Opt.SERVER, Opt.REMOTE, Opt.ADDRESS);
        switch (command) {
            case BLOCKING_COUNTER:
            case BLOCKING_THROUGHPUT:
            case BLOCKING_LATENCY:
                peer.addAll(EnumSet.of(Opt.MESSAGES, Opt.LENGTH, Opt.CONNECTIONS));
                return peer;
            case NETTY_HELLO:
            case NETTY_ECHO:
                peer.addAll(EnumSet.of(Opt.CONNECTIONS, Opt.THREADS));
                return peer;
            case NETTY_THROUGHPUT:
            case NETTY_LATENCY:
                peer.addAll(EnumSet.of(Opt.MESSAGES, Opt.LENGTH, Opt.THRESHOLD, Opt.CONNECTIONS, Opt.THREADS));
                return peer;
            case BENCH:
                peer.addAll(EnumSet.of(Opt.FILE, Opt.OUTPUT, Opt.FLAVOUR, Opt.NAME, Opt.THREADS));
                return peer;
            case BENCH_COMPARE:
                return EnumSet.of(Opt.FILE, Opt.OUTPUT, Opt.FLAVOURS, Opt.PERFTEST, Opt.ADDRESS);
            case BENCH_SELECTOR:
                return EnumSet.of(Opt.CONNECTIONS);
            case DEMO:
                return EnumSet.of(Opt.OUTPUT, Opt.FLAVOURS, Opt.PERFTEST, Opt.ADDRESS);
            default:
                throw new IllegalStateException("no options for " + command);
        }
    }

    private static void apply(Builder b, Opt opt, String value) throws UsageException {
        switch (opt) {
            case SERVER:
                b.server = true;
                break;
            case REMOTE:
                b.remote = parseAddress(opt, value);
                break;
            case ADDRESS:
                b.address = parseAddress(opt, value);
                b.addressGiven = true;
                break;
            case MESSAGES:
                b.messages = parsePositive(opt, value);
                break;
            case LENGTH:
                b.length = parsePositive(opt, value);
                break;
            case THRESHOLD:
                b.threshold = parsePositive(opt, value);
                break;
            case CONNECTIONS:
                b.connections = parsePositive(opt, value);
                break;
            case THREADS:
                b.threads = parsePositive(opt, value);
                b.threadsGiven = true;
                break;
            case FILE:
                b.file = Paths.get(nonEmpty(opt, value));
                break;
            case OUTPUT:
                b.output = Paths.get(nonEmpty(opt, value));
                break;
            case FLAVOUR:
                b.flavour = parseFlavour(opt, value);
                break;
            case FLAVOURS:
                for (String part : nonEmpty(opt, value).split(",")) {
                    Flavour f = parseFlavour(opt, part.trim());
                    if (b.flavours.contains(f)) {
                        throw new UsageException("option " + opt.display() + " lists '" + part.trim() + "' twice");
                    }
                    b.flavours.add(f);
                }
                break;
            case NAME:
                b.name = nonEmpty(opt, value);
                break;
            case PERFTEST:
                b.perftest = Paths.get(nonEmpty(opt, value));
                break;
            default:
                throw new IllegalStateException("unhandled option " + opt);
        }
    }

    private static void validate(Builder b, Set<Opt> seen) throws UsageException {
        if (b.command.isPeer()) {
            if (b.server && b.remote != null) {
                throw new UsageException("give either -s/--server or -r/--remote, not both");
            }
            if (!b.server && b.remote == null) {
                throw new UsageException("'" + b.command.words()
                        + "' needs -s/--server (to listen) or -r/--remote host:port (to connect)");
            }
        }
        if (b.command == Command.BLOCKING_COUNTER && b.length < MIN_COUNTER_LENGTH) {
            throw new UsageException("option -l/--length must be at least " + MIN_COUNTER_LENGTH
                    + " for 'blocking counter' (the counter is a long), got " + b.length);
        }
        if ((b.command == Command.BENCH || b.command == Command.BENCH_COMPARE) && !seen.contains(Opt.FILE)) {
            throw new UsageException("'" + b.command.words() + "' needs -f/--file <run description JSON>");
        }
    }

    static InetSocketAddress parseAddress(Opt opt, String value) throws UsageException {
        int colon = value.lastIndexOf(':');
        if (colon <= 0 || colon == value.length() - 1) {
            throw new UsageException("option " + opt.display() + " expects host:port, got '" + value + "'");
        }
        String host = value.substring(0, colon);
        if (host.startsWith("[") && host.endsWith("]")) {
            host = host.substring(1, host.length() - 1);
        }
        int port;
        try {
            port = Integer.parseInt(value.substring(colon + 1));
        } catch (NumberFormatException e) {
            throw new UsageException("option " + opt.display() + " has a bad port in '" + value + "'");
        }
        if (port < 0 || port > 65535) {
            throw new UsageException("option " + opt.display() + " port must be 0..65535, got " + port);
        }
        InetSocketAddress address = new InetSocketAddress(host, port);
        if (address.isUnresolved()) {
            throw new UsageException("option " + opt.display() + ": cannot resolve host '" + host + "'");
        }
        return address;
    }

    private static int parsePositive(Opt opt, String value) throws UsageException {
        int n;
        try {
            n = Integer.parseInt(value.replace("_", ""));
        } catch (NumberFormatException e) {
            throw new UsageException("option " + opt.display() + " expects a whole number, got '" + value + "'");
        }
        if (n < 1) {
            throw new UsageException("option " + opt.display() + " must be at least 1, got " + n);
        }
        return n;
    }

    private static String nonEmpty(Opt opt, String value) throws UsageException {
        if (value.isEmpty()) {
            throw new UsageException("option " + opt.display() + " needs a non-empty value");
        }
        return value;
    }

    private static Flavour parseFlavour(Opt opt, String value) throws UsageException {
        try {
            return Flavour.parse(value);
        } catch (IllegalArgumentException e) {
            throw new UsageException("option " + opt.display() + ": " + e.getMessage());
        }
    }

    /** The help text. */
    public static String usage() {
        return String.join(System.lineSeparator(),
                "Usage: hadronio <mode> <command> [options]",
                "",
                "Modes and commands:",
                "  blocking counter                   both sides send an increasing number and check the one they receive",
                "  blocking benchmark throughput      unidirectional throughput (client sends)",
                "  blocking benchmark latency         round trips with percentiles",
                "  netty hello                        client sends a short message and exits once the server answered",
                "  netty echo                         server echoes; client sends each line of standard input",
                "  netty benchmark throughput|latency the same benchmarks over netty, -c for many connections",
                "  bench -s|-r ... -f run.json        one side of the benchmark harness (Observatory run description)",
                "  bench compare -f run.json          run the harness for the JDK provider and hadroNIO side by side",
                "  bench selector [-c n]              memory per idle connection, selectNow() cost, idle CPU; both providers",
                "  demo                               a short JDK-vs-hadroNIO comparison on loopback with a plot",
                "  --version                          hadroNIO's and UCX's versions",
                "  doctor                             checks this machine for hadroNIO (as java -jar hadronio-<version>.jar)",
                "  counters <pid>                     hadroNIO's counters of a running JVM, over JMX",
                "",
                "Options:",
                "  -s, --server                listen (server side)",
                "  -r, --remote host:port      connect to this server (client side)",
                "  -a, --address host:port     local address to listen on (default " + DEFAULT_ADDRESS + ")",
                "  -m, --messages n            messages per connection (default " + DEFAULT_MESSAGES + ")",
                "  -l, --length n              message length in bytes (default " + DEFAULT_LENGTH + ")",
                "  -t, --threshold n           messages between flushes, netty (default " + DEFAULT_THRESHOLD + ")",
                "  -c, --connections n         connections (default " + DEFAULT_CONNECTIONS
                        + "; a server exits after serving them)",
                "      --threads n             netty event loop threads (default " + DEFAULT_THREADS + ")",
                "  -f, --file run.json         bench: the run description",
                "  -o, --output dir            bench, demo: result directory",
                "      --flavour f             bench: blocking, selector or netty (overrides the description)",
                "      --flavours f,g          bench compare, demo: flavours to compare",
                "      --name label            bench: result name written to the CSV files",
                "      --perftest path         bench compare, demo: ucx_perftest for reference figures (default: the one built\n                              with the bundled UCX under target/release/build, if present)",
                "  -h, --help                  this text",
                "",
                "The launcher enables hadroNIO with -Djava.nio.channels.spi.SelectorProvider=dev.hadronio.HadronioProvider;",
                "DISABLE_HADRONIO=true in the environment runs on the JDK's own provider instead.");
    }

    /** Formats a flavour list as given on the command line. */
    public static String describe(List<Flavour> flavours) {
        List<String> names = new ArrayList<>();
        for (Flavour f : flavours) {
            names.add(f.name().toLowerCase(Locale.ROOT));
        }
        return String.join(",", names);
    }

    private static final class Builder {
        Command command;
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
    }
}
