package dev.hadronio.examples.hosts;

import dev.hadronio.examples.cli.Cli;
import java.io.PrintStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.HashSet;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.Callable;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

/**
 * {@code hadronio hosts}: hadroNIO between two hosts. {@code serve} on one, {@code check} on the
 * other runs the checks against it (streams, libraries, many connections, faults) and prints a
 * table. Both need hadroNIO (the launcher's default). The checks that change the network run
 * only when asked: {@code --link-command} cuts the link between the hosts, {@code --faults} takes
 * this host's interface down (root), and the server powers its host off only when started with
 * {@code --poweroff-command}.
 */
public final class HostsCli {
    static final int DEFAULT_PORT = 7000;

    private HostsCli() {
    }

    /** Adds {@code hosts} with {@code serve}, {@code check} and {@code child} to the {@code hadronio} command. */
    public static void addTo(CommandLine top, PrintStream out) {
        CommandLine hosts = new CommandLine(new Hosts());
        hosts.addSubcommand("serve", new Serve(out));
        hosts.addSubcommand("check", new CheckCommand(out));
        hosts.addSubcommand("bench", new Bench(out));
        hosts.addSubcommand("child", new Child(out));
        top.addSubcommand("hosts", hosts);
    }

    @Command(name = "hosts", mixinStandardHelpOptions = true, synopsisSubcommandLabel = "(serve | check)",
            description = "hadroNIO between two hosts: 'serve' on one, 'check' on the other.")
    static final class Hosts implements Callable<Integer> {
        @Override
        public Integer call() {
            throw new CommandLine.ParameterException(new CommandLine(this), "'hosts' needs 'serve' or 'check'");
        }
    }

    @Command(name = "serve", mixinStandardHelpOptions = true,
            description = "Serves the checks of another host on ports PORT..PORT+6 (control, echoes, netty, HTTP, ZooKeeper, sink) "
                    + "until a check says quit.")
    static final class Serve implements Callable<Integer> {
        private final PrintStream out;

        @Option(names = {"-a", "--address"}, converter = Cli.AddressConverter.class, paramLabel = "host:port",
                description = "address and first port to listen on (default 0.0.0.0:" + DEFAULT_PORT + ")")
        InetSocketAddress address = new InetSocketAddress("0.0.0.0", DEFAULT_PORT);

        @Option(names = "--poweroff-command", paramLabel = "command",
                description = "a shell command that powers this host off, for the last check (without it that check is left out)")
        String powerOff;

        Serve(PrintStream out) {
            this.out = out;
        }

        @Override
        public Integer call() throws Exception {
            new HostServer(address, powerOff, out).run();
            return 0;
        }
    }

    @Command(name = "check", mixinStandardHelpOptions = true,
            description = "Runs the checks against 'hadronio hosts serve' on another host; prints a table, exit status 1 if one failed.")
    static final class CheckCommand implements Callable<Integer> {
        private final PrintStream out;

        @Option(names = {"-r", "--remote"}, required = true, paramLabel = "host[:port]",
                description = "the serving host (port: its first port, default " + DEFAULT_PORT + ")")
        String remote;

        @Option(names = "--jdk-port", paramLabel = "port",
                description = "first port of a second server there on the JDK's provider (DISABLE_HADRONIO=true), for the link fault")
        int jdkPort = -1;

        @Option(names = "--only", split = ",", paramLabel = "name", description = "run only these checks (their names in the JUnit report, e.g. linkDown)")
        List<String> only;

        @Option(names = "--junit", paramLabel = "file", description = "write a JUnit XML report here")
        Path junit;

        @Option(names = "--quit", description = "tell the servers to exit at the end")
        boolean quit;

        @Option(names = "--link-command", paramLabel = "command",
                description = "a shell command that cuts the link between the hosts with the argument 'down' and restores it with 'up' "
                        + "(without it, the link check is skipped)")
        String linkCommand;

        @Option(names = "--faults", description = "let the checks take this host's interface to the server down for a few seconds "
                + "(needs root; without it, that check is skipped)")
        boolean faults;

        CheckCommand(PrintStream out) {
            this.out = out;
        }

        @Override
        public Integer call() throws Exception {
            if (!Hadronio.active()) {
                throw new Exception("the checks need hadroNIO as this JVM's selector provider (not DISABLE_HADRONIO=true)");
            }
            InetSocketAddress server = remoteAddress(remote);
            InetAddress address = server.getAddress();
            int port = server.getPort();
            try (Control control = Control.connect(new InetSocketAddress(address, port), 120_000);
                 Control jdk = jdkPort > 0 ? Control.connect(new InetSocketAddress(address, jdkPort), 120_000) : null) {
                String hello = control.ask("hello");
                out.println("hosts: server at " + address.getHostAddress() + ":" + port + ": " + hello);
                if (!hello.contains("provider=" + Hadronio.PROVIDER)) {
                    throw new Exception("the server does not run on hadroNIO: " + hello);
                }
                if (jdk != null) {
                    out.println("hosts: server on the JDK's provider at port " + jdkPort + ": " + jdk.ask("hello"));
                }
                Target target = new Target(address, port, jdkPort, control, jdk, hello.contains("poweroff=yes"), linkCommand, faults);
                HostChecks checks = new HostChecks(target, out);
                Set<String> names = only == null ? new HashSet<>() : new LinkedHashSet<>(only);
                Report report = checks.run(checks.all(), names, junit);
                if (quit) {
                    for (Control c : Arrays.asList(control, jdk)) {
                        if (c != null) {
                            c.quit();
                        }
                    }
                }
                return report.passed() ? 0 : 1;
            }
        }
    }

    @Command(name = "bench", mixinStandardHelpOptions = true,
            description = "Figures against 'hadronio hosts serve' on another host: 64 B round trips and 64 KiB / 1 MiB streams, blocking, "
                    + "selector and netty, for the JDK's provider (against a second server on it) and hadroNIO, with ucx_perftest; "
                    + "prints a table, writes CSV and plots.")
    static final class Bench implements Callable<Integer> {
        private final PrintStream out;

        @Option(names = {"-r", "--remote"}, required = true, paramLabel = "host[:port]",
                description = "the serving host (port: its first port, default " + DEFAULT_PORT + ")")
        String remote;

        @Option(names = "--jdk-port", required = true, paramLabel = "port",
                description = "first port of the server there on the JDK's provider (DISABLE_HADRONIO=true)")
        int jdkPort;

        @Option(names = "--perftest", paramLabel = "path", description = "ucx_perftest, for the native figures (its server runs there)")
        Path perftest;

        @Option(names = "--perftest-port", paramLabel = "port", description = "the port of ucx_perftest's server there (default 13337)")
        int perftestPort = 13337;

        @Option(names = {"-o", "--output"}, paramLabel = "dir", description = "where the CSV and plots go (default: hosts-bench)")
        Path output = Path.of("hosts-bench");

        Bench(PrintStream out) {
            this.out = out;
        }

        @Override
        public Integer call() throws Exception {
            if (!Hadronio.active()) {
                throw new Exception("the benchmark needs hadroNIO as this JVM's selector provider (not DISABLE_HADRONIO=true)");
            }
            return HostBench.run(remoteAddress(remote), jdkPort, perftest, perftestPort, output, out);
        }
    }

    @Command(name = "child", hidden = true, description = "A JVM the checks start for one fault (see HostChild).")
    static final class Child implements Callable<Integer> {
        private final PrintStream out;

        @Parameters(index = "0", paramLabel = "mode")
        String mode;

        @Parameters(index = "1", paramLabel = "host:port", converter = Cli.AddressConverter.class)
        InetSocketAddress remote;

        Child(PrintStream out) {
            this.out = out;
        }

        @Override
        public Integer call() throws Exception {
            return new HostChild(out).run(mode, remote);
        }
    }

    /** {@code host[:port]}, the server's base port by default. */
    static InetSocketAddress remoteAddress(String remote) throws java.net.UnknownHostException {
        int colon = remote.lastIndexOf(':');
        String host = colon > 0 ? remote.substring(0, colon) : remote;
        int port = colon > 0 ? Integer.parseInt(remote.substring(colon + 1)) : DEFAULT_PORT;
        return new InetSocketAddress(InetAddress.getByName(host), port);
    }
}
