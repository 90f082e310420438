package dev.hadronio.examples.hosts;

import java.io.EOFException;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.SelectionKey;
import java.nio.channels.Selector;
import java.nio.channels.SocketChannel;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * Many connections between two JVMs: each of them, on one selector here and one there, echoes a
 * few round trips and moves to UCX. The queue pairs and registered memory of both processes (as
 * the kernel lists them, {@code rdma resource}) do not grow with connections, since the
 * connections between two workers share one UCX endpoint.
 */
final class ScaleCheck {
    static final int CONNECTIONS = 1000;
    /** Connections opened before the others are counted. */
    static final int FIRST = 100;
    static final int ROUNDS = 3;
    /** Bounds per process for the connections after the first: the queue pairs they add in all. */
    static final int MAX_ADDED_QPS = 2;
    /**
     * The registered memory they add in all, per process. UCX's pools of registered buffers grow
     * in steps (2 MiB at a time in these runs) in each worker, whenever the messages in flight need
     * more, so a process with two selectors may add a step in each while connections come;
     * connections that each registered memory of their own (their 32 receive slots of 16 KiB, say)
     * would add hundreds of MiB.
     */
    static final long MAX_REGISTERED_GROWTH = 8L << 20;

    private ScaleCheck() {
    }

    static Check check(Target target) {
        return new Check("manyConnections", CONNECTIONS + " connections on two selectors", 900, () -> run(target));
    }

    /** One connection's round trips. */
    private static final class Conn {
        final SocketChannel channel;
        final ByteBuffer out = ByteBuffer.allocateDirect(64);
        final ByteBuffer in = ByteBuffer.allocateDirect(64);
        int rounds;
        String path = "";

        Conn(SocketChannel channel) {
            this.channel = channel;
        }

        boolean done() {
            return rounds >= ROUNDS && Hadronio.decided(path);
        }
    }

    /** Queue pairs and registered bytes of this process and the server's, and the endpoints of each. */
    private static long[] resources(Target target) throws Exception {
        long[] here = Kernel.rdmaResources();
        Map<String, Long> counters = Hadronio.counters();
        return new long[] {here[0], here[2], counters.get("EndpointsCreated") - counters.get("EndpointsDestroyed"),
            target.serverFigure("stats", "qps"), target.serverFigure("stats", "mrbytes"),
            target.serverFigure("counters", "EndpointsCreated") - target.serverFigure("counters", "EndpointsDestroyed")};
    }

    /**
     * Opens {@code FIRST} connections, then the rest: what the rest added (queue pairs, registered
     * memory, endpoints, on both sides) is the cost of a connection, without the worker a new
     * selector opens for the first.
     */
    private static String run(Target target) throws Exception {
        List<Conn> conns = new ArrayList<>();
        long start = System.nanoTime();
        try (Selector selector = Selector.open()) {
            open(target, selector, conns, FIRST);
            long[] before = resources(target);
            open(target, selector, conns, CONNECTIONS - FIRST);
            double seconds = (System.nanoTime() - start) / 1e9;
            long[] after = resources(target);
            int rdma = 0;
            for (Conn conn : conns) {
                conn.path = Hadronio.path(conn.channel);
                rdma += Hadronio.overRdma(conn.path) ? 1 : 0;
            }
            if (rdma != CONNECTIONS) {
                String other = conns.stream().map(c -> c.path).filter(p -> !Hadronio.overRdma(p)).findFirst().orElse("");
                throw new IllegalStateException(rdma + " of " + CONNECTIONS + " connections on UCX over RDMA; another path: " + other);
            }
            int more = CONNECTIONS - FIRST;
            long[] added = new long[after.length];
            for (int i = 0; i < after.length; i++) {
                added[i] = after[i] - before[i];
            }
            String figures = String.format(Locale.ROOT, "all on UCX over RDMA in %.1f s. Here: %d queue pairs, %.1f MiB registered, "
                    + "%d endpoint(s); the last %d connections added %d queue pairs, %.1f MiB registered (%.2f KiB each), %d endpoints. "
                    + "Server: %d queue pairs, %.1f MiB registered, %d endpoint(s); added %d queue pairs, %.1f MiB (%.2f KiB each), "
                    + "%d endpoints", seconds, after[0], after[1] / 1048576.0, after[2], more, added[0], added[1] / 1048576.0,
                    added[1] / 1024.0 / more, added[2], after[3], after[4] / 1048576.0, after[5], added[3], added[4] / 1048576.0,
                    added[4] / 1024.0 / more, added[5]);
            if (added[0] > MAX_ADDED_QPS || added[3] > MAX_ADDED_QPS || added[1] > MAX_REGISTERED_GROWTH || added[4] > MAX_REGISTERED_GROWTH
                    || added[2] > 0 || added[5] > 0) {
                throw new IllegalStateException("connections cost more than they should: " + figures);
            }
            return figures;
        } finally {
            for (Conn conn : conns) {
                conn.channel.close();
            }
        }
    }

    /** Opens {@code count} connections on {@code selector} and runs them until each has moved to UCX (or stayed on TCP). */
    private static void open(Target target, Selector selector, List<Conn> conns, int count) throws Exception {
        for (int i = 0; i < count; i++) {
            SocketChannel channel = SocketChannel.open();
            channel.configureBlocking(false);
            channel.connect(target.at(HostServer.SELECTOR_ECHO));
            Conn conn = new Conn(channel);
            conns.add(conn);
            channel.register(selector, SelectionKey.OP_CONNECT, conn);
        }
        int done = 0;
        long deadline = System.nanoTime() + 600_000_000_000L;
        while (done < count) {
            if (System.nanoTime() > deadline) {
                throw new IllegalStateException(done + " of " + count + " connections done within 600 s");
            }
            selector.select(1000);
            for (SelectionKey key : selector.selectedKeys()) {
                Conn conn = (Conn) key.attachment();
                if (step(key, conn) && conn.done()) {
                    done++;
                    key.interestOps(0);
                }
            }
            selector.selectedKeys().clear();
        }
    }

    /** Moves one connection on; true if it completed a step this time. */
    private static boolean step(SelectionKey key, Conn conn) throws IOException {
        SocketChannel channel = conn.channel;
        if (key.isConnectable()) {
            channel.finishConnect();
            key.interestOps(SelectionKey.OP_WRITE);
            return false;
        }
        if (key.isWritable()) {
            channel.write(conn.out);
            if (!conn.out.hasRemaining()) {
                conn.in.clear();
                key.interestOps(SelectionKey.OP_READ);
            }
            return false;
        }
        if (key.isReadable()) {
            if (channel.read(conn.in) < 0) {
                throw new EOFException("the selector echo closed a connection");
            }
            if (!conn.in.hasRemaining()) {
                conn.rounds++;
                conn.path = Hadronio.path(channel);
                if (conn.done()) {
                    return true;
                }
                conn.out.clear();
                key.interestOps(SelectionKey.OP_WRITE);
            }
        }
        return false;
    }
}
