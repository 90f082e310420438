package dev.hadronio.examples.cli;

import dev.hadronio.examples.cli.Options.Command;
import dev.hadronio.examples.transport.Flavour;
import picocli.CommandLine;
import picocli.CommandLine.ArgGroup;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.ParameterException;
import picocli.CommandLine.Spec;
import picocli.CommandLine.TypeConversionException;

import java.net.InetSocketAddress;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.Callable;

/**
 * The command tree of {@code hadronio} (picocli): {@code blocking}, {@code netty}, {@code bench} and {@code demo}
 * turn their words and options into an {@link Options} and hand it to a {@link Runner}; {@code bench apps},
 * {@code doctor} and {@code counters} are added by the caller. Every value is checked while parsing, so a bad
 * command line is reported with the offending word and the usage of the command it was given to.
 */
public final class Cli {

    /** Runs a parsed peer, bench or demo command line; returns the exit status. */
    public interface Runner {
        int run(Options options) throws Exception;
    }

    static final String FOOTER = "%nThe launcher enables hadroNIO with "
            + "-Djava.nio.channels.spi.SelectorProvider=dev.hadronio.HadronioProvider;%n"
            + "DISABLE_HADRONIO=true in the environment runs on the JDK's own provider instead.";

    private Cli() {
    }

    /** The {@code hadronio} command line with its subcommands; {@code runner} runs what they parse. */
    public static CommandLine commandLine(Runner runner) {
        return new CommandLine(new Top(runner));
    }

    /**
     * Once every subcommand is added: lets {@code --version} of each command in the tree print {@code version},
     * formats their help for 120 columns, and reads a subcommand's name after an option as that option's value
     * ({@code bench --flavour selector}).
     */
    public static void finish(CommandLine line, CommandLine.IVersionProvider version) {
        line.getCommandSpec().versionProvider(version);
        for (CommandLine sub : line.getSubcommands().values()) {
            finish(sub, version);
        }
        line.setUsageHelpWidth(120);
        line.setAllowSubcommandsAsOptionParameters(true);
    }

    /**
     * The {@link Options} a command line describes, without running it; throws {@link ParameterException} as
     * {@code hadronio} would report it.
     */
    public static Options parse(String... args) {
        CommandLine line = commandLine(options -> 0);
        finish(line, () -> new String[0]);
        CommandLine.ParseResult result = line.parseArgs(args);
        while (result.hasSubcommand()) {
            result = result.subcommand();
        }
        Object leaf = result.commandSpec().userObject();
        if (!(leaf instanceof Leaf)) {
            throw new ParameterException(result.commandSpec().commandLine(),
                    "'" + result.commandSpec().qualifiedName() + "' needs a command");
        }
        return ((Leaf) leaf).options();
    }

    @CommandLine.Command(name = "hadronio", mixinStandardHelpOptions = true, footer = FOOTER,
            synopsisSubcommandLabel = "<mode> <command>",
            description = "hadroNIO's example application: java.nio, netty and benchmark peers, the JDK-vs-hadroNIO "
                    + "comparisons and the operations tools.",
            subcommands = {Blocking.class, Netty.class, Bench.class, Demo.class})
    static final class Top implements Callable<Integer> {
        final Runner runner;

        @Spec
        CommandSpec spec;

        Top(Runner runner) {
            this.runner = runner;
        }

        @Override
        public Integer call() {
            throw new ParameterException(spec.commandLine(), "missing mode (blocking, netty, bench or demo)");
        }
    }

    /** A command without an action of its own: names what may follow it. */
    abstract static class Group implements Callable<Integer> {
        @Spec
        CommandSpec spec;

        @Override
        public Integer call() {
            List<String> names = new ArrayList<>(spec.subcommands().keySet());
            throw new ParameterException(spec.commandLine(),
                    "'" + spec.qualifiedName() + "' needs a command (" + String.join(", ", names) + ")");
        }
    }

    /** A command that runs: parses into {@link Options} and runs them with the top command's runner. */
    abstract static class Leaf implements Callable<Integer> {
        @Spec
        CommandSpec spec;

        private final Command command;

        Leaf(Command command) {
            this.command = command;
        }

        /** Fills in this command's options. */
        abstract void fill(Options.Builder b);

        final Options options() {
            Options.Builder b = new Options.Builder(command);
            fill(b);
            String problem = b.problem();
            if (problem != null) {
                throw new ParameterException(spec.commandLine(), problem);
            }
            return b.build();
        }

        @Override
        public final Integer call() throws Exception {
            Options options = options();
            return ((Top) spec.root().userObject()).runner.run(options);
        }
    }

    // ---- options shared by several commands

    /** One of -s and -r, not both: the side a peer plays (a missing side is named by {@link Options.Builder}). */
    static final class Side {
        @Option(names = {"-s", "--server"}, required = true, description = "listen (server side)")
        boolean server;

        @Option(names = {"-r", "--remote"}, required = true, paramLabel = "host:port",
                converter = AddressConverter.class, description = "connect to this server (client side)")
        InetSocketAddress remote;
    }

    /** Options of every server or client. */
    static final class Peer {
        @ArgGroup(exclusive = true, multiplicity = "0..1")
        Side side;

        @Option(names = {"-a", "--address"}, paramLabel = "host:port", converter = AddressConverter.class,
                description = "local address to listen on (default " + Options.DEFAULT_ADDRESS + ")")
        InetSocketAddress address;

        void fill(Options.Builder b) {
            if (side != null) {
                b.server = side.server;
                b.remote = side.remote;
            }
            b.address(address);
        }
    }

    static final class Counts {
        @Option(names = {"-m", "--messages"}, paramLabel = "n", converter = PositiveConverter.class,
                description = "messages per connection (default " + Options.DEFAULT_MESSAGES + ")")
        int messages = Options.DEFAULT_MESSAGES;

        @Option(names = {"-l", "--length"}, paramLabel = "n", converter = PositiveConverter.class,
                description = "message length in bytes (default " + Options.DEFAULT_LENGTH + ")")
        int length = Options.DEFAULT_LENGTH;

        void fill(Options.Builder b) {
            b.messages = messages;
            b.length = length;
        }
    }

    static final class Connections {
        @Option(names = {"-c", "--connections"}, paramLabel = "n", converter = PositiveConverter.class,
                description = "connections (default " + Options.DEFAULT_CONNECTIONS
                        + "; a server exits after serving them)")
        int connections = Options.DEFAULT_CONNECTIONS;
    }

    static final class Threads {
        @Option(names = "--threads", paramLabel = "n", converter = PositiveConverter.class,
                description = "netty event loop threads (default " + Options.DEFAULT_THREADS + ")")
        Integer threads;

        void fill(Options.Builder b) {
            if (threads != null) {
                b.threads = threads;
                b.threadsGiven = true;
            }
        }
    }

    static final class Comparison {
        @Option(names = {"-o", "--output"}, paramLabel = "dir", description = "result directory")
        Path output;

        @Option(names = "--flavours", paramLabel = "f,g", split = ",", converter = FlavourConverter.class,
                description = "flavours to compare: blocking, selector, netty")
        List<Flavour> flavours = new ArrayList<>();

        @Option(names = "--perftest", paramLabel = "path", description = "ucx_perftest for reference figures "
                + "(default: the one built with the bundled UCX under target/release/build, if present)")
        Path perftest;

        @Option(names = {"-a", "--address"}, paramLabel = "host:port", converter = AddressConverter.class,
                description = "address the compared servers listen on")
        InetSocketAddress address;

        void fill(Options.Builder b) {
            b.output = output;
            b.flavours.addAll(flavours);
            b.perftest = perftest;
            b.address(address);
        }
    }

    // ---- blocking

    @CommandLine.Command(name = "blocking", mixinStandardHelpOptions = true,
            description = "Blocking java.nio peers.", subcommands = {BlockingCounter.class, BlockingBenchmark.class})
    static final class Blocking extends Group {
    }

    /** Options of the blocking peers. */
    abstract static class BlockingPeer extends Leaf {
        @Mixin
        Peer peer;
        @Mixin
        Counts counts;
        @Mixin
        Connections connections;

        BlockingPeer(Command command) {
            super(command);
        }

        @Override
        void fill(Options.Builder b) {
            peer.fill(b);
            counts.fill(b);
            b.connections = connections.connections;
        }
    }

    @CommandLine.Command(name = "counter", mixinStandardHelpOptions = true, footer = FOOTER,
            description = "Both sides send an increasing number and check the one they receive.")
    static final class BlockingCounter extends BlockingPeer {
        BlockingCounter() {
            super(Command.BLOCKING_COUNTER);
        }
    }

    @CommandLine.Command(name = "benchmark", mixinStandardHelpOptions = true,
            description = "Throughput (the client sends) or round trips with percentiles.",
            subcommands = {BlockingThroughput.class, BlockingLatency.class})
    static final class BlockingBenchmark extends Group {
    }

    @CommandLine.Command(name = "throughput", mixinStandardHelpOptions = true, footer = FOOTER,
            description = "Unidirectional throughput: the client sends.")
    static final class BlockingThroughput extends BlockingPeer {
        BlockingThroughput() {
            super(Command.BLOCKING_THROUGHPUT);
        }
    }

    @CommandLine.Command(name = "latency", mixinStandardHelpOptions = true, footer = FOOTER,
            description = "Round trips with percentiles.")
    static final class BlockingLatency extends BlockingPeer {
        BlockingLatency() {
            super(Command.BLOCKING_LATENCY);
        }
    }

    // ---- netty

    @CommandLine.Command(name = "netty", mixinStandardHelpOptions = true, description = "netty peers.",
            subcommands = {NettyHello.class, NettyEcho.class, NettyBenchmark.class})
    static final class Netty extends Group {
    }

    abstract static class NettyConversation extends Leaf {
        @Mixin
        Peer peer;
        @Mixin
        Connections connections;
        @Mixin
        Threads threads;

        NettyConversation(Command command) {
            super(command);
        }

        @Override
        void fill(Options.Builder b) {
            peer.fill(b);
            b.connections = connections.connections;
            threads.fill(b);
        }
    }

    @CommandLine.Command(name = "hello", mixinStandardHelpOptions = true, footer = FOOTER,
            description = "The client sends a short message and exits once the server answered.")
    static final class NettyHello extends NettyConversation {
        NettyHello() {
            super(Command.NETTY_HELLO);
        }
    }

    @CommandLine.Command(name = "echo", mixinStandardHelpOptions = true, footer = FOOTER,
            description = "The server echoes; the client sends each line of standard input.")
    static final class NettyEcho extends NettyConversation {
        NettyEcho() {
            super(Command.NETTY_ECHO);
        }
    }

    @CommandLine.Command(name = "benchmark", mixinStandardHelpOptions = true,
            description = "The benchmarks over netty; -c for many connections.",
            subcommands = {NettyThroughput.class, NettyLatency.class})
    static final class NettyBenchmark extends Group {
    }

    abstract static class NettyMeasure extends NettyConversation {
        @Mixin
        Counts counts;

        @Option(names = {"-t", "--threshold"}, paramLabel = "n", converter = PositiveConverter.class,
                description = "messages between flushes (default " + Options.DEFAULT_THRESHOLD + ")")
        int threshold = Options.DEFAULT_THRESHOLD;

        NettyMeasure(Command command) {
            super(command);
        }

        @Override
        void fill(Options.Builder b) {
            super.fill(b);
            counts.fill(b);
            b.threshold = threshold;
        }
    }

    @CommandLine.Command(name = "throughput", mixinStandardHelpOptions = true, footer = FOOTER,
            description = "Unidirectional throughput over netty: the client sends.")
    static final class NettyThroughput extends NettyMeasure {
        NettyThroughput() {
            super(Command.NETTY_THROUGHPUT);
        }
    }

    @CommandLine.Command(name = "latency", mixinStandardHelpOptions = true, footer = FOOTER,
            description = "Round trips over netty with percentiles.")
    static final class NettyLatency extends NettyMeasure {
        NettyLatency() {
            super(Command.NETTY_LATENCY);
        }
    }

    // ---- bench and demo

    @CommandLine.Command(name = "bench", mixinStandardHelpOptions = true, footer = FOOTER,
            description = "One side of the benchmark harness (an Observatory run description); its subcommands "
                    + "compare the JDK's provider and hadroNIO side by side.",
            subcommands = {BenchCompare.class, BenchSelector.class, BenchThreads.class, BenchScale.class})
    static final class Bench extends Leaf {
        @Mixin
        Peer peer;
        @Mixin
        Threads threads;

        @Option(names = {"-f", "--file"}, paramLabel = "run.json", description = "the run description (required)")
        Path file;

        @Option(names = {"-o", "--output"}, paramLabel = "dir", description = "result directory")
        Path output;

        @Option(names = "--flavour", paramLabel = "f", converter = FlavourConverter.class,
                description = "blocking, selector or netty (overrides the description)")
        Flavour flavour;

        @Option(names = "--name", paramLabel = "label", description = "result name written to the CSV files")
        String name;

        Bench() {
            super(Command.BENCH);
        }

        @Override
        void fill(Options.Builder b) {
            peer.fill(b);
            threads.fill(b);
            b.file = file;
            b.output = output;
            b.flavour = flavour;
            b.name = name;
        }
    }

    @CommandLine.Command(name = "compare", mixinStandardHelpOptions = true, footer = FOOTER,
            description = "Runs the harness for the JDK's provider and for hadroNIO, side by side.")
    static final class BenchCompare extends Leaf {
        @Mixin
        Comparison comparison;

        @Option(names = {"-f", "--file"}, required = true, paramLabel = "run.json", description = "the run description")
        Path file;

        BenchCompare() {
            super(Command.BENCH_COMPARE);
        }

        @Override
        void fill(Options.Builder b) {
            comparison.fill(b);
            b.file = file;
        }
    }

    @CommandLine.Command(name = "selector", mixinStandardHelpOptions = true,
            description = "Memory per idle connection, selectNow() cost and idle CPU, with both providers.")
    static final class BenchSelector extends Leaf {
        @Option(names = {"-c", "--connections"}, paramLabel = "n", converter = PositiveConverter.class,
                description = "idle connections (default ${DEFAULT-VALUE})")
        int connections = 1000;

        BenchSelector() {
            super(Command.BENCH_SELECTOR);
        }

        @Override
        void fill(Options.Builder b) {
            b.connections = connections;
        }
    }

    @CommandLine.Command(name = "threads", mixinStandardHelpOptions = true,
            description = "A thread-per-connection server in blocking mode: memory, descriptors, first echo and "
                + "idle CPU per connection, with both providers.")
    static final class BenchThreads extends Leaf {
        @Option(names = {"-c", "--connections"}, paramLabel = "n", converter = PositiveConverter.class,
                description = "connections (default ${DEFAULT-VALUE})")
        int connections = 10000;

        BenchThreads() {
            super(Command.BENCH_THREADS);
        }

        @Override
        void fill(Options.Builder b) {
            b.connections = connections;
        }
    }

    @CommandLine.Command(name = "scale", mixinStandardHelpOptions = true,
            description = "netty echo at growing connection counts (one 1 KiB message in flight on each): round "
                + "trips/s, p99, CPU per round trip and time to the first echo on all, with both providers.")
    static final class BenchScale extends Leaf {
        @Option(names = "--counts", paramLabel = "n,m", split = ",", converter = PositiveConverter.class,
                description = "connection counts (default 1,16,256,1000,4000)")
        List<Integer> counts = new ArrayList<>(Arrays.asList(1, 16, 256, 1000, 4000));

        @Option(names = "--seconds", paramLabel = "s", converter = PositiveConverter.class,
                description = "seconds measured at each count, after a warm-up of at least 2 s that goes on while "
                    + "the JIT compilers of the two JVMs are busy (default ${DEFAULT-VALUE})")
        int seconds = 5;

        @Option(names = "--warmup-max", paramLabel = "s", converter = PositiveConverter.class,
                description = "most warm-up seconds at each count; 2 for a fixed warm-up (default ${DEFAULT-VALUE})")
        int warmUpMax = 30;

        @Option(names = {"-o", "--output"}, paramLabel = "dir", description = "result directory (CSV and plot)")
        Path output;

        @Option(names = "--perftest", paramLabel = "path", description = "ucx_perftest that measures the host's "
                + "latency before and after each run (default: the one built with the bundled UCX under "
                + "target/release/build, if present)")
        Path perftest;

        BenchScale() {
            super(Command.BENCH_SCALE);
        }

        @Override
        void fill(Options.Builder b) {
            b.counts.addAll(counts);
            b.seconds = seconds;
            b.warmUpMax = warmUpMax;
            b.output = output;
            b.perftest = perftest;
        }
    }

    @CommandLine.Command(name = "demo", mixinStandardHelpOptions = true, footer = FOOTER,
            description = "A short JDK-vs-hadroNIO comparison on loopback, with a plot.")
    static final class Demo extends Leaf {
        @Mixin
        Comparison comparison;

        Demo() {
            super(Command.DEMO);
        }

        @Override
        void fill(Options.Builder b) {
            comparison.fill(b);
        }
    }

    // ---- values

    /** {@code host:port}, IPv6 hosts in brackets; the host must resolve. */
    public static final class AddressConverter implements CommandLine.ITypeConverter<InetSocketAddress> {
        @Override
        public InetSocketAddress convert(String value) {
            int colon = value.lastIndexOf(':');
            if (colon <= 0 || colon == value.length() - 1) {
                throw new TypeConversionException("expected host:port, got '" + value + "'");
            }
            String host = value.substring(0, colon);
            if (host.startsWith("[") && host.endsWith("]")) {
                host = host.substring(1, host.length() - 1);
            }
            int port;
            try {
                port = Integer.parseInt(value.substring(colon + 1));
            } catch (NumberFormatException e) {
                throw new TypeConversionException("bad port in '" + value + "'");
            }
            if (port < 0 || port > 65535) {
                throw new TypeConversionException("port must be 0..65535, got " + port);
            }
            InetSocketAddress address = new InetSocketAddress(host, port);
            if (address.isUnresolved()) {
                throw new TypeConversionException("cannot resolve host '" + host + "'");
            }
            return address;
        }
    }

    /** A whole number of at least 1; underscores group digits ({@code 1_000_000}). */
    static final class PositiveConverter implements CommandLine.ITypeConverter<Integer> {
        @Override
        public Integer convert(String value) {
            int n;
            try {
                n = Integer.parseInt(value.replace("_", ""));
            } catch (NumberFormatException e) {
                throw new TypeConversionException("expected a whole number, got '" + value + "'");
            }
            if (n < 1) {
                throw new TypeConversionException("must be at least 1, got " + n);
            }
            return n;
        }
    }

    static final class FlavourConverter implements CommandLine.ITypeConverter<Flavour> {
        @Override
        public Flavour convert(String value) {
            try {
                return Flavour.parse(value.trim());
            } catch (IllegalArgumentException e) {
                throw new TypeConversionException(e.getMessage());
            }
        }
    }
}
