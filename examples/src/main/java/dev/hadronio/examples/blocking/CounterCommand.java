package dev.hadronio.examples.blocking;

import dev.hadronio.examples.cli.Options;
import dev.hadronio.examples.report.TextTable;
import dev.hadronio.examples.report.Units;
import dev.hadronio.examples.simple.Setup;
import dev.hadronio.examples.transport.Connect;
import dev.hadronio.examples.util.Parallel;
import dev.hadronio.examples.util.Progress;

import java.io.EOFException;
import java.io.IOException;
import java.io.PrintStream;
import java.io.UncheckedIOException;
import java.net.InetSocketAddress;
import java.net.StandardSocketOptions;
import java.nio.ByteBuffer;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;

/**
 * {@code blocking counter}: on every connection both sides send 0, 1, 2, ... (a long at the start of each
 * message) from a writer thread while a reader thread checks that the peer's numbers arrive in order. Exercises
 * a reader and a writer thread on one blocking channel.
 */
public final class CounterCommand {

    private static final Duration CONNECT_PATIENCE = Duration.ofSeconds(30);

    private final Options options;
    private final PrintStream out;
    private final AtomicLong received = new AtomicLong();

    public CounterCommand(Options options, PrintStream out) {
        this.options = options;
        this.out = out;
    }

    /** Runs one side to the end; throws if a number arrives out of order or a connection fails. */
    public void run() throws IOException {
        List<SocketChannel> channels = new ArrayList<>();
        try {
            Setup setup = options.isServer() ? acceptAll(channels) : connectAll(channels);
            out.println("Counting to " + setup.messages + " on " + setup.connections + " connection(s), messages of "
                    + setup.length + " bytes");
            Result[] results = new Result[channels.size()];
            long total = (long) setup.messages * setup.connections;
            Progress progress = Progress.start("received", total, received::get, out);
            try {
                Parallel.run("connection", channels.size(),
                        i -> results[i] = count(channels.get(i), setup.messages, setup.length));
            } finally {
                progress.close();
            }
            printTable(results, setup);
        } finally {
            for (SocketChannel c : channels) {
                c.close();
            }
        }
    }

    private Setup connectAll(List<SocketChannel> channels) throws IOException {
        InetSocketAddress remote = options.remote();
        Setup first = null;
        for (int i = 0; i < options.connections(); i++) {
            SocketChannel c = Connect.withRetry(remote, CONNECT_PATIENCE, () -> SocketChannel.open(remote));
            channels.add(c);
            Setup s = new Setup(options.command(), options.connections(), i, options.messages(), options.length(), 1);
            writeFully(c, s.encode());
            first = first == null ? s : first;
        }
        out.println("Connected to " + remote);
        return first;
    }

    private Setup acceptAll(List<SocketChannel> channels) throws IOException {
        try (ServerSocketChannel server = ServerSocketChannel.open()) {
            server.setOption(StandardSocketOptions.SO_REUSEADDR, Boolean.TRUE);
            server.bind(options.address());
            out.println("Listening on " + server.getLocalAddress());
            Setup first = null;
            do {
                SocketChannel c = server.accept();
                channels.add(c);
                ByteBuffer header = ByteBuffer.allocate(Setup.BYTES);
                readFully(c, header);
                Setup s = Setup.decode(header, options.command());
                if (first == null) {
                    first = s;
                } else if (!first.sameRun(s)) {
                    throw new IOException("connections disagree: " + first + " vs " + s);
                }
                out.println("Accepted " + c.getRemoteAddress());
            } while (channels.size() < first.connections);
            return first;
        }
    }

    private Result count(SocketChannel channel, int messages, int length) throws Exception {
        channel.setOption(StandardSocketOptions.TCP_NODELAY, Boolean.TRUE);
        long start = System.nanoTime();
        Thread writer = new Thread(() -> {
            try {
                ByteBuffer b = ByteBuffer.allocateDirect(length);
                for (long i = 0; i < messages; i++) {
                    b.clear();
                    b.putLong(0, i);
                    writeFully(channel, b);
                }
            } catch (IOException e) {
                throw new UncheckedIOException(e);
            }
        }, Thread.currentThread().getName() + "-writer");
        Throwable[] writerFailure = new Throwable[1];
        writer.setUncaughtExceptionHandler((t, e) -> writerFailure[0] = e);
        writer.start();

        ByteBuffer b = ByteBuffer.allocateDirect(length);
        for (long expected = 0; expected < messages; expected++) {
            b.clear();
            try {
                readFully(channel, b);
            } catch (EOFException e) {
                throw new IOException("the peer closed the connection after " + expected + " of " + messages
                        + " numbers", e);
            }
            long got = b.getLong(0);
            if (got != expected) {
                throw new IOException("expected number " + expected + " but received " + got);
            }
            received.incrementAndGet();
        }
        writer.join();
        if (writerFailure[0] != null) {
            throw new IOException("writer failed: " + writerFailure[0].getMessage(), writerFailure[0]);
        }
        return new Result(messages, (System.nanoTime() - start) / 1e9);
    }

    private void printTable(Result[] results, Setup setup) {
        TextTable table = new TextTable("connection", "sent", "received in order", "time", "messages/s", "data");
        for (int i = 0; i < results.length; i++) {
            Result r = results[i];
            table.row(Integer.toString(i), Integer.toString(r.messages), Integer.toString(r.messages),
                    Units.seconds(r.seconds), Units.messageRate(r.messages / r.seconds),
                    Units.rate((double) r.messages * setup.length / r.seconds));
        }
        out.println();
        out.print(table);
        out.println("OK: every number arrived in order.");
    }

    static void writeFully(SocketChannel c, ByteBuffer b) throws IOException {
        while (b.hasRemaining()) {
            c.write(b);
        }
    }

    static void readFully(SocketChannel c, ByteBuffer b) throws IOException {
        while (b.hasRemaining()) {
            if (c.read(b) < 0) {
                throw new EOFException("connection closed by the peer");
            }
        }
    }

    private static final class Result {
        final int messages;
        final double seconds;

        Result(int messages, double seconds) {
            this.messages = messages;
            this.seconds = seconds;
        }
    }
}
