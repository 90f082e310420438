package dev.hadronio.examples.hosts;

import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.SocketChannel;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * Byte streams across hosts: echoes of 1 B to 16 MiB over blocking channels and through a selector,
 * end of stream and half-close, a reader and a writer thread on one channel, connections one after
 * another, and messages above the slot length, which take UCX's rendezvous (RDMA) from and into the
 * application's memory.
 */
final class StreamChecks {
    static final int[] SIZES = {1, 1024, 16 * 1024, 64 * 1024, 1 << 20, 16 << 20};
    static final int SEQUENTIAL = 200;
    static final int PING_PONGS = 3000;
    static final int LARGE = 1 << 20;
    static final int LARGE_COUNT = 16;

    private StreamChecks() {
    }

    static List<Check> all(Target target) {
        return Arrays.asList(
            new Check("pingPong", PING_PONGS + " round trips of 64 B", 600, () -> pingPong(target)),
            new Check("blockingEcho", "blocking echo 1 B..16 MiB, CRC-32", 600, () -> blocking(target)),
            new Check("selectorEcho", "selector echo 1 B..16 MiB, CRC-32", 600, () -> selector(target)),
            new Check("sequentialConnections", SEQUENTIAL + " connections one after another", 600, () -> sequential(target)),
            new Check("rendezvous", LARGE_COUNT + " x 1 MiB by rendezvous, no copy", 300, () -> rendezvous(target)));
    }

    private static int localPort(SocketChannel channel) throws java.io.IOException {
        return ((InetSocketAddress) channel.getLocalAddress()).getPort();
    }

    /** Connects to the blocking echo, waits for the path and checks both ends of it. */
    static SocketChannel upgraded(Target target, int offset) throws Exception {
        SocketChannel channel = SocketChannel.open(target.at(offset));
        String path = Echo.decide(channel);
        Echo.requireRdma("the connection", path);
        // The server's end switches when its thread next handles the connection's events.
        long deadline = System.nanoTime() + Echo.DECIDE_MILLIS * 1_000_000;
        String server;
        while (!Hadronio.decided(server = target.serverPath(localPort(channel))) && System.nanoTime() < deadline) {
            Thread.sleep(5);
        }
        Echo.requireRdma("the server's end", server);
        return channel;
    }

    /** 64-byte round trips one after another, each message different and checked. */
    private static String pingPong(Target target) throws Exception {
        try (SocketChannel channel = upgraded(target, HostServer.BLOCKING_ECHO)) {
            ByteBuffer in = ByteBuffer.allocateDirect(64);
            long start = System.nanoTime();
            for (int i = 0; i < PING_PONGS; i++) {
                Echo.roundTrip(channel, in, 64, i, "round trip");
            }
            return String.format(Locale.ROOT, "%.0f us each on average; %s", (System.nanoTime() - start) / 1e3 / PING_PONGS,
                    Hadronio.path(channel));
        }
    }

    private static String blocking(Target target) throws Exception {
        String path = "";
        for (int size : SIZES) {
            try (SocketChannel channel = upgraded(target, HostServer.BLOCKING_ECHO)) {
                path = Hadronio.path(channel);
                Echo.blocking(channel, Echo.payload(size, size), 64 * 1024);
            }
        }
        return "6 sizes, writer and reader threads, EOF after half-close; " + path;
    }

    private static String selector(Target target) throws Exception {
        String path = "";
        for (int size : SIZES) {
            path = Echo.selector(target.at(HostServer.SELECTOR_ECHO), Echo.payload(size, size + 1));
            Echo.requireRdma("a selector's connection", path);
        }
        return "6 sizes; " + path;
    }

    private static String sequential(Target target) throws Exception {
        long start = System.nanoTime();
        for (int i = 0; i < SEQUENTIAL; i++) {
            try (SocketChannel channel = upgraded(target, HostServer.BLOCKING_ECHO)) {
                Echo.blocking(channel, Echo.payload(4096, i), 4096);
            } catch (Exception e) {
                throw new IllegalStateException("connection " + (i + 1) + " of " + SEQUENTIAL + ": " + e.getMessage(), e);
            }
        }
        return String.format(Locale.ROOT, "every one upgraded on both ends, %.0f ms each", (System.nanoTime() - start) / 1e6 / SEQUENTIAL);
    }

    /**
     * Messages of 1 MiB (above the 16 KiB slot length) from and into direct buffers, one at a time
     * each way: hadroNIO's counters show them sent from and received into the application's
     * memory on both sides, UCX's description of the endpoint the RDMA lane its rendezvous
     * protocol reads them with, and the RDMA device's counters what went over the wire.
     */
    private static String rendezvous(Target target) throws Exception {
        Map<String, Long> before = Hadronio.counters();
        long serverSends = target.serverFigure("counters", "LargeSendsDirect");
        long serverReceives = target.serverFigure("counters", "LargeReceivesDirect");
        Map<String, Long> device = Kernel.rdmaCounters();
        String lane;
        try (SocketChannel channel = upgraded(target, HostServer.BLOCKING_ECHO)) {
            lane = Hadronio.rdmaLane(channel);
            if (lane == null || lane.contains("tcp/")) {
                throw new IllegalStateException("the connection's endpoint has no RDMA lane for bulk data: " + lane);
            }
            ByteBuffer in = ByteBuffer.allocateDirect(LARGE);
            for (int i = 0; i < LARGE_COUNT; i++) {
                Echo.roundTrip(channel, in, LARGE, i, "message");
            }
        }
        long sent = Hadronio.grown(before, "LargeSendsDirect");
        long received = Hadronio.grown(before, "LargeReceivesDirect");
        long serverSent = target.serverFigure("counters", "LargeSendsDirect") - serverSends;
        long serverReceived = target.serverFigure("counters", "LargeReceivesDirect") - serverReceives;
        if (Math.min(Math.min(sent, received), Math.min(serverSent, serverReceived)) < LARGE_COUNT) {
            throw new IllegalStateException(String.format(Locale.ROOT, "of %d messages each way, %d were sent and %d received in "
                    + "the application's memory here, %d and %d on the server", LARGE_COUNT, sent, received, serverSent, serverReceived));
        }
        return String.format(Locale.ROOT, "from/into the application's memory: here %d/%d, server %d/%d; UCX's lane for them: %s; "
                + "device counters: %s", sent, received, serverSent, serverReceived, lane, Kernel.growth(device, Kernel.rdmaCounters()));
    }
}
