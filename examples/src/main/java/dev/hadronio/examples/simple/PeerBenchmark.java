package dev.hadronio.examples.simple;

import dev.hadronio.examples.cli.Options;
import dev.hadronio.examples.cli.Options.Command;
import dev.hadronio.examples.report.LatencyStats;
import dev.hadronio.examples.report.TextTable;
import dev.hadronio.examples.report.Units;
import dev.hadronio.examples.transport.Flavour;
import dev.hadronio.examples.transport.MessageTransport;
import dev.hadronio.examples.transport.TransportFactory;
import dev.hadronio.examples.transport.TransportListener;
import dev.hadronio.examples.util.Parallel;
import org.HdrHistogram.Histogram;

import java.io.IOException;
import java.io.PrintStream;
import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

/**
 * {@code blocking|netty benchmark throughput|latency}: the client streams messages to the server (throughput) or
 * does round trips (latency) on {@code -c} connections at once, one thread each, after a warm-up of a tenth of the
 * messages. The client sends a {@link Setup} first, so the server needs only {@code -s}. Both sides print a table.
 */
public final class PeerBenchmark {

    private static final Duration CONNECT_PATIENCE = Duration.ofSeconds(30);
    private static final int MAX_WARM_UP = 100_000;

    private final Options options;
    private final Flavour flavour;
    private final PrintStream out;

    public PeerBenchmark(Options options, Flavour flavour, PrintStream out) {
        this.options = options;
        this.flavour = flavour;
        this.out = out;
    }

    static int warmUp(int messages) {
        return Math.min(messages / 10, MAX_WARM_UP);
    }

    private boolean isLatency(Command c) {
        return c == Command.BLOCKING_LATENCY || c == Command.NETTY_LATENCY;
    }

    public void run() throws IOException {
        List<MessageTransport> connections = new ArrayList<>();
        try (TransportFactory factory = flavour.newFactory(options.threads())) {
            try {
                Setup setup = options.isServer() ? acceptAll(factory, connections) : connectAll(factory, connections);
                out.println("Running '" + setup.command.words() + "' (" + flavour.label() + "): " + setup.connections
                        + " connection(s), " + setup.messages + " messages of " + setup.length + " bytes"
                        + (flavour == Flavour.NETTY ? ", flush every " + setup.threshold : "")
                        + ", warm-up " + warmUp(setup.messages));
                if (isLatency(setup.command)) {
                    runLatency(connections, setup);
                } else {
                    runThroughput(connections, setup);
                }
            } finally {
                for (MessageTransport t : connections) {
                    t.close();
                }
            }
        }
    }

    private Setup connectAll(TransportFactory factory, List<MessageTransport> connections) throws IOException {
        Setup first = null;
        for (int i = 0; i < options.connections(); i++) {
            MessageTransport t = factory.connect(options.remote(), CONNECT_PATIENCE);
            connections.add(t);
            Setup s = new Setup(options.command(), options.connections(), i, options.messages(), options.length(),
                    options.threshold());
            t.writeBytes(s.encode());
            first = first == null ? s : first;
        }
        out.println("Connected to " + options.remote());
        return first;
    }

    private Setup acceptAll(TransportFactory factory, List<MessageTransport> connections) throws IOException {
        try (TransportListener listener = factory.listen(options.address())) {
            out.println("Listening on " + listener.localAddress());
            Setup first = null;
            do {
                MessageTransport t = listener.accept();
                connections.add(t);
                ByteBuffer header = ByteBuffer.allocate(Setup.BYTES);
                t.readBytes(header);
                Setup s = Setup.decode(header, options.command());
                if (first == null) {
                    first = s;
                } else if (!first.sameRun(s)) {
                    throw new IOException("connections disagree: " + first + " vs " + s);
                }
            } while (connections.size() < first.connections);
            out.println("Accepted " + connections.size() + " connection(s)");
            return first;
        }
    }

    private void runThroughput(List<MessageTransport> connections, Setup s) throws IOException {
        double[] seconds = new double[connections.size()];
        boolean client = !options.isServer();
        Parallel.run("connection", connections.size(), i -> {
            MessageTransport t = connections.get(i);
            ByteBuffer signal = ByteBuffer.allocate(1);
            handshake(t, signal, client);
            int warm = warmUp(s.messages);
            if (client) {
                t.sendMessages(warm, s.length, s.threshold);
                await(t, signal);
                long start = System.nanoTime();
                t.sendMessages(s.messages, s.length, s.threshold);
                await(t, signal);
                seconds[i] = (System.nanoTime() - start) / 1e9;
            } else {
                t.receiveMessages(warm, s.length);
                answer(t, signal);
                long start = System.nanoTime();
                t.receiveMessages(s.messages, s.length);
                seconds[i] = (System.nanoTime() - start) / 1e9;
                answer(t, signal);
            }
        });
        TextTable table = new TextTable("connection", "messages", "size", "time", "messages/s", "throughput");
        double slowest = 0;
        for (int i = 0; i < seconds.length; i++) {
            slowest = Math.max(slowest, seconds[i]);
            table.row(Integer.toString(i), Integer.toString(s.messages), Units.bytes(s.length),
                    Units.seconds(seconds[i]), Units.messageRate(s.messages / seconds[i]),
                    Units.rate((double) s.messages * s.length / seconds[i]));
        }
        if (seconds.length > 1) {
            long all = (long) s.messages * seconds.length;
            table.row("all", Long.toString(all), Units.bytes(s.length), Units.seconds(slowest),
                    Units.messageRate(all / slowest), Units.rate((double) all * s.length / slowest));
        }
        out.println();
        out.println(client ? "Sent (timed until the server confirmed receipt):" : "Received:");
        out.print(table);
    }

    private void runLatency(List<MessageTransport> connections, Setup s) throws IOException {
        boolean client = !options.isServer();
        int warm = warmUp(s.messages);
        List<Histogram> recorded = new ArrayList<>();
        for (int i = 0; i < connections.size(); i++) {
            recorded.add(client ? LatencyStats.newHistogram() : null);
        }
        Parallel.run("connection", connections.size(), i -> {
            MessageTransport t = connections.get(i);
            handshake(t, ByteBuffer.allocate(1), client);
            if (client) {
                t.ping(warm, s.length, null);
                t.ping(s.messages, s.length, recorded.get(i));
            } else {
                t.pong(warm + s.messages, s.length);
            }
        });
        if (!client) {
            out.println("Answered " + (long) (warm + s.messages) * connections.size() + " round trips");
            return;
        }
        TextTable table = new TextTable("connection", "round trips", "size", "average", "min", "50%", "95%", "99%",
                "99.9%", "99.99%", "max");
        Histogram all = LatencyStats.newHistogram();
        for (int i = 0; i < connections.size(); i++) {
            addLatencyRow(table, Integer.toString(i), new LatencyStats(recorded.get(i)), s.length);
            all.add(recorded.get(i));
        }
        if (connections.size() > 1) {
            addLatencyRow(table, "all", new LatencyStats(all), s.length);
        }
        out.println();
        out.println("Round trips:");
        out.print(table);
    }

    private static void addLatencyRow(TextTable table, String name, LatencyStats st, int size) {
        table.row(name, Long.toString(st.count()), Units.bytes(size), Units.seconds(st.averageSeconds()),
                Units.seconds(st.minSeconds()), Units.seconds(st.percentileSeconds(0.5)),
                Units.seconds(st.percentileSeconds(0.95)), Units.seconds(st.percentileSeconds(0.99)),
                Units.seconds(st.percentileSeconds(0.999)), Units.seconds(st.percentileSeconds(0.9999)),
                Units.seconds(st.maxSeconds()));
    }

    /** The server says "go" on every connection once all of them are accepted. */
    private static void handshake(MessageTransport t, ByteBuffer signal, boolean client) throws IOException {
        if (client) {
            await(t, signal);
        } else {
            answer(t, signal);
        }
    }

    private static void answer(MessageTransport t, ByteBuffer signal) throws IOException {
        signal.clear();
        signal.put(0, (byte) 1);
        t.writeBytes(signal);
    }

    private static void await(MessageTransport t, ByteBuffer signal) throws IOException {
        signal.clear();
        t.readBytes(signal);
    }
}
