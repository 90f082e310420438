package dev.hadronio.examples;

import dev.hadronio.examples.apps.AppsCli;
import dev.hadronio.examples.bench.BenchCommand;
import dev.hadronio.examples.blocking.CounterCommand;
import dev.hadronio.examples.cli.Cli;
import dev.hadronio.examples.cli.Options;
import dev.hadronio.examples.compare.CompareCommand;
import dev.hadronio.examples.figures.SelectorFigures;
import dev.hadronio.examples.figures.ScaleFigures;
import dev.hadronio.examples.figures.ThreadFigures;
import dev.hadronio.examples.hosts.HostsCli;
import dev.hadronio.examples.netty.EchoCommand;
import dev.hadronio.examples.netty.HelloCommand;
import dev.hadronio.examples.ops.OpsCli;
import dev.hadronio.examples.simple.PeerBenchmark;
import dev.hadronio.examples.transport.Flavour;
import picocli.CommandLine;

import java.io.InputStream;
import java.io.PrintStream;
import java.io.PrintWriter;
import java.nio.channels.spi.SelectorProvider;
import java.util.ServiceConfigurationError;

/**
 * The {@code hadronio} command. The launcher script sets the JVM-wide selector provider property, exactly as any
 * application enables hadroNIO; with {@code DISABLE_HADRONIO=true} in the environment the property is cleared
 * before anything touches java.nio, so the same program runs on the JDK's provider.
 */
public final class Main {

    public static final String PROVIDER_PROPERTY = "java.nio.channels.spi.SelectorProvider";
    public static final String DISABLE_VARIABLE = "DISABLE_HADRONIO";

    public static final int EXIT_OK = 0;
    public static final int EXIT_FAILURE = 1;
    public static final int EXIT_USAGE = CommandLine.ExitCode.USAGE;

    private Main() {
    }

    public static void main(String[] args) {
        if ("true".equalsIgnoreCase(System.getenv(DISABLE_VARIABLE))) {
            System.clearProperty(PROVIDER_PROPERTY);
        }
        System.exit(run(args, System.in, System.out, System.err));
    }

    /** Runs one command line and returns the process exit code; never calls {@code System.exit}. */
    public static int run(String[] args, InputStream in, PrintStream out, PrintStream err) {
        CommandLine line = Cli.commandLine(options -> execute(options, in, out, err));
        AppsCli.addTo(line.getSubcommands().get("bench"), out);
        OpsCli.addTo(line, out);
        HostsCli.addTo(line, out);
        Cli.finish(line, () -> new String[] {version()});
        line.setOut(new PrintWriter(out, true));
        line.setErr(new PrintWriter(err, true));
        line.setExecutionExceptionHandler((e, command, parsed) -> failed(e, command, err));
        return line.execute(args);
    }

    private static int execute(Options options, InputStream in, PrintStream out, PrintStream err) throws Exception {
        if (options.command().isPeer()) {
            String provider = activeProvider(err);
            if (provider == null) {
                return EXIT_FAILURE;
            }
            out.println("SelectorProvider: " + provider);
        }
        dispatch(options, in, out);
        return EXIT_OK;
    }

    /** A command that failed while running: its words, the message and each cause; a stack trace for a bug. */
    private static int failed(Exception e, CommandLine command, PrintStream err) {
        String words = command.getCommandSpec().qualifiedName(" ").replaceFirst("^hadronio ", "");
        err.println("hadronio: " + words + " failed: " + e.getMessage());
        for (Throwable cause = e.getCause(); cause != null; cause = cause.getCause()) {
            err.println("  caused by: " + cause);
        }
        if (e instanceof RuntimeException) {
            e.printStackTrace(err);
        }
        return EXIT_FAILURE;
    }

    /** The class name of the JVM-wide provider, or null (after explaining why) if it cannot be loaded. */
    private static String activeProvider(PrintStream err) {
        try {
            SelectorProvider provider = SelectorProvider.provider();
            String name = provider.getClass().getName();
            if (name.equals("dev.hadronio.HadronioProvider") && Boolean.FALSE.equals(isActive(provider))) {
                return name + " (not in use, the JDK's channels: see the warning above)";
            }
            return name;
        } catch (ServiceConfigurationError | LinkageError e) {
            // The JDK wraps what the provider threw; the first cause with a message says what is wrong.
            Throwable reason = e;
            while (reason.getMessage() == null && reason.getCause() != null) {
                reason = reason.getCause();
            }
            err.println("hadronio: cannot load the selector provider -D" + PROVIDER_PROPERTY + "="
                    + System.getProperty(PROVIDER_PROPERTY) + ": " + reason);
            err.println("Is the hadroNIO jar on the class path? " + DISABLE_VARIABLE
                    + "=true runs on the JDK's provider.");
            return null;
        }
    }

    /** The provider's version line: hadroNIO's and its UCX's when hadroNIO is the JVM-wide provider. */
    private static String version() {
        SelectorProvider provider = SelectorProvider.provider();
        try {
            return "hadronio command, " + provider.getClass().getMethod("version").invoke(provider);
        } catch (ReflectiveOperationException e) {
            return "hadronio command on the JDK's provider (" + provider.getClass().getName() + ")";
        }
    }

    /** hadroNIO's {@code isActive()} (the app runs with the provider jar on its class path only). */
    private static Object isActive(SelectorProvider provider) {
        try {
            return provider.getClass().getMethod("isActive").invoke(provider);
        } catch (ReflectiveOperationException e) {
            return null;
        }
    }

    private static void dispatch(Options options, InputStream in, PrintStream out) throws Exception {
        switch (options.command()) {
            case BLOCKING_COUNTER:
                new CounterCommand(options, out).run();
                break;
            case BLOCKING_THROUGHPUT:
            case BLOCKING_LATENCY:
                new PeerBenchmark(options, Flavour.BLOCKING, out).run();
                break;
            case NETTY_HELLO:
                new HelloCommand(options, out).run();
                break;
            case NETTY_ECHO:
                new EchoCommand(options, in, out).run();
                break;
            case NETTY_THROUGHPUT:
            case NETTY_LATENCY:
                new PeerBenchmark(options, Flavour.NETTY, out).run();
                break;
            case BENCH:
                new BenchCommand(options, out).run();
                break;
            case BENCH_COMPARE:
            case DEMO:
                new CompareCommand(options, out).run();
                break;
            case BENCH_SELECTOR:
                new SelectorFigures(options.connections() > 1 ? options.connections() : 1000, out).run();
                break;
            case BENCH_THREADS:
                new ThreadFigures(options.connections(), out).run();
                break;
            case BENCH_SCALE:
                new ScaleFigures(options.counts().stream().mapToInt(Integer::intValue).toArray(), options.seconds(),
                    options.warmUpMax(), options.output(), options.perftest(), out).run();
                break;
            default:
                throw new IllegalStateException("unhandled command " + options.command());
        }
    }
}
