package dev.hadronio.examples.hosts;

import dev.hadronio.examples.util.OwnProcess;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.SocketChannel;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.atomic.AtomicReference;

/**
 * Faults across hosts: the path a connection takes where UCX offers only slower transports, a
 * peer JVM killed mid-transfer, the link cut for 15 s, queue pairs that fail while the TCP
 * connection lives on, descriptors and memory after all of it, and (last) the peer's host
 * powered off.
 */
@SuppressWarnings("try") // close() of the children and loops may throw InterruptedException: callers let it through
final class FaultChecks {
    static final int LINK_DOWN_SECONDS = 15;

    private FaultChecks() {
    }

    static List<Check> all(Target target) {
        List<Check> checks = new ArrayList<>();
        checks.add(new Check("upgradeDecision", "which paths stay on TCP", 300, () -> decision(target)));
        checks.add(new Check("killedPeer", "a JVM killed mid-transfer", 300, () -> killed(target)));
        checks.add(new Check("linkDown", "the link cut for " + LINK_DOWN_SECONDS + " s, both providers", 300, () -> linkDown(target)));
        checks.add(new Check("queuePairError", "queue pairs in error (the interface down)", 300, () -> queuePair(target)));
        return checks;
    }

    /** Descriptors and resident memory of this JVM and the server, to compare before and after. */
    static final class Steady {
        final int fds;
        final long rss;
        final long serverFds;
        final long serverRss;
        /** UCX workers alive on each side (created minus destroyed): kept ones hold descriptors. */
        final long workers;
        final long serverWorkers;

        /** Measures once the descriptors of both sides stay the same for a second (closed connections are gone), at most 60 s. */
        Steady(Target target) throws Exception {
            long deadline = System.nanoTime() + 60_000_000_000L;
            int last = -1;
            long lastServer = -1;
            while (true) {
                System.gc();
                int here = OwnProcess.descriptors();
                long server = target.serverFigure("stats", "fds");
                if (here == last && server == lastServer || System.nanoTime() > deadline) {
                    break;
                }
                last = here;
                lastServer = server;
                Thread.sleep(1000);
            }
            fds = last;
            serverFds = lastServer;
            rss = OwnProcess.residentBytes();
            serverRss = target.serverFigure("stats", "rss");
            Map<String, Long> counters = Hadronio.counters();
            workers = counters.getOrDefault("WorkersCreated", 0L) - counters.getOrDefault("WorkersDestroyed", 0L);
            serverWorkers = serverCounter(target, "WorkersCreated") - serverCounter(target, "WorkersDestroyed");
        }

        /** A counter of the server's hadroNIO; 0 where it runs on the JDK's provider (it has none). */
        private static long serverCounter(Target target, String name) throws Exception {
            try {
                return target.serverFigure("counters", name);
            } catch (IOException e) {
                return 0;
            }
        }

        /**
         * Descriptors this side may hold beyond {@code then}'s: two, and those of UCX workers kept
         * for reuse that were not alive then (a selector's hub keeps one made ahead of need after
         * each lane it opens, up to {@code hadronio.spareWorkers}, 4).
         */
        static long allowedGrowth(long workersThen, long workersNow) {
            long kept = Math.max(0, workersNow - workersThen);
            return kept <= SPARE_WORKERS ? 2 + kept * WORKER_DESCRIPTORS : 2;
        }
    }

    /** Workers hadroNIO keeps for reuse at most (the default of {@code hadronio.spareWorkers}). */
    private static final long SPARE_WORKERS = 4;

    /** Descriptors a UCX worker holds at most: its event fd, shared-memory segments, transport sockets. */
    private static final long WORKER_DESCRIPTORS = 8;

    /** How long descriptors and memory may take to come back after the faults. */
    private static final long SETTLE_SECONDS = 60;

    /**
     * Fails if descriptors grew (beyond those of workers kept for reuse, see
     * {@link Steady#allowedGrowth}) or resident memory grew by more than 64 MiB on either side
     * since {@code before}, and stayed so for {@link #SETTLE_SECONDS}: the connections the faults
     * broke close on UCX's timers and the kernel's, and a count that holds still for a second may
     * still fall.
     */
    static Check steady(Target target, AtomicReference<Steady> before) {
        return new Check("steadyResources", "descriptors and memory after the faults", 180, () -> {
            Steady then = before.get();
            long deadline = System.nanoTime() + SETTLE_SECONDS * 1_000_000_000L;
            while (true) {
                Steady now = new Steady(target);
                String figures = String.format(Locale.ROOT, "descriptors %d -> %d here, %d -> %d on the server; UCX workers %d -> %d here, %d -> %d on the server;"
                        + " resident memory %+.1f MiB here, %+.1f MiB on the server",
                        then.fds, now.fds, then.serverFds, now.serverFds, then.workers, now.workers, then.serverWorkers, now.serverWorkers,
                        (now.rss - then.rss) / 1048576.0, (now.serverRss - then.serverRss) / 1048576.0);
                boolean grew = now.fds > then.fds + Steady.allowedGrowth(then.workers, now.workers)
                        || now.serverFds > then.serverFds + Steady.allowedGrowth(then.serverWorkers, now.serverWorkers)
                        || now.rss - then.rss > 64 << 20 || now.serverRss - then.serverRss > 64 << 20;
                if (!grew) {
                    return figures;
                }
                if (System.nanoTime() > deadline) {
                    throw new IllegalStateException("resources grew and stayed so for " + SETTLE_SECONDS + " s: " + figures);
                }
                Thread.sleep(2000);
            }
        });
    }

    /** The network interface this host reaches the peer through ({@code ip route get}). */
    private static String interfaceTo(Target target) throws Exception {
        String[] words = Kernel.run("ip", "route", "get", target.host.getHostAddress()).split("\\s+");
        for (int i = 0; i + 1 < words.length; i++) {
            if (words[i].equals("dev")) {
                return words[i + 1];
            }
        }
        throw new IOException("no route to " + target.host.getHostAddress());
    }

    /**
     * Where UCX reaches the peer only through its TCP transport (a child JVM with
     * {@code UCX_NET_DEVICES} set to the Ethernet interface), and where it reaches it only through a
     * software RDMA device and {@code hadronio.softwareRdma} is left at its default, the connection
     * stays on the kernel's TCP, and says why.
     */
    private static String decision(Target target) throws Exception {
        List<String> found = new ArrayList<>();
        String ethernet = interfaceTo(target);
        try (HostChild.Process child = HostChild.Process.start(true, Collections.emptyMap(),
                Collections.singletonMap("UCX_NET_DEVICES", ethernet), "path", target.at(HostServer.BLOCKING_ECHO))) {
            String path = child.await("PATH", 120);
            if (!path.startsWith("tcp (UCX reaches the peer only through its TCP transport")) {
                throw new IllegalStateException("with UCX_NET_DEVICES=" + ethernet + " the path is " + path);
            }
            found.add("UCX's TCP only: tcp");
        }
        if (Kernel.softwareRdma()) {
            try (HostChild.Process child = HostChild.Process.start(true, Collections.singletonMap("hadronio.softwareRdma", "false"),
                    Collections.emptyMap(), "path", target.at(HostServer.BLOCKING_ECHO))) {
                String path = child.await("PATH", 120);
                if (!path.startsWith("tcp (UCX reaches the peer only through a software RDMA device")) {
                    throw new IllegalStateException("with hadronio.softwareRdma=false the path is " + path);
                }
                found.add("software RDMA by default: tcp");
            }
        }
        found.add("RDMA device with hadronio.softwareRdma=true: ucx (every other check)");
        return String.join("; ", found);
    }

    /** A hadroNIO JVM streaming to the server is killed with SIGKILL: the server's read fails at once. */
    private static String killed(Target target) throws Exception {
        try (HostChild.Process child = HostChild.Process.start(true, Collections.emptyMap(), Collections.emptyMap(), "stream",
                target.at(HostServer.SINK))) {
            int port = Integer.parseInt(child.await("PORT", 120));
            Echo.requireRdma("the streaming child's connection", child.await("PATH", 120));
            long deadline = System.nanoTime() + 120_000_000_000L;
            while (sinkBytes(target, port) < 4 << 20) {
                if (System.nanoTime() > deadline) {
                    throw new IllegalStateException("the server received only " + sinkBytes(target, port) + " bytes in 120 s");
                }
                Thread.sleep(100);
            }
            child.process.destroyForcibly();
            long killed = System.nanoTime();
            String sink;
            while ((sink = target.control.ask("sink " + port)).endsWith(" open")) {
                if (System.nanoTime() - killed > 30_000_000_000L) {
                    throw new IllegalStateException("the server's read did not end within 30 s of the kill: " + sink);
                }
                Thread.sleep(50);
            }
            double seconds = (System.nanoTime() - killed) / 1e9;
            if (!sink.contains("ended IOException")) {
                throw new IllegalStateException("the server's read of a killed peer ended with " + sink);
            }
            if (seconds > 5) {
                throw new IllegalStateException(String.format(Locale.ROOT, "the server noticed the kill after %.1f s", seconds));
            }
            return String.format(Locale.ROOT, "server's read failed %.2f s after the kill (%s)", seconds,
                    sink.substring(sink.indexOf("IOException")));
        }
    }

    private static long sinkBytes(Target target, int port) throws IOException {
        String[] words = target.control.ask("sink " + port).split(" ");
        return words[0].equals("bytes") ? Long.parseLong(words[1]) : 0;
    }

    /**
     * The link between the hosts is cut for 15 s (the link command, a pulled cable) while a
     * hadroNIO connection (this JVM) and one of the JDK's provider (a child JVM, to a server on
     * the JDK's provider) keep echoing: both go on afterwards, with every byte back once. UCX's
     * reliable connections retransmit for as long as the control connection waits
     * ({@code hadronio.livenessMillis}).
     */
    private static String linkDown(Target target) throws Exception {
        if (target.linkCommand == null) {
            throw new Check.Skipped("no --link-command to cut the link between the hosts");
        }
        HostChild.Process jdk = target.jdkBase > 0 ? HostChild.Process.start(false, Collections.emptyMap(), Collections.emptyMap(),
                "echo", target.jdkAt(HostServer.BLOCKING_ECHO)) : null;
        try (EchoLoop loop = new EchoLoop(target.at(HostServer.BLOCKING_ECHO))) {
            if (jdk != null) {
                jdk.await("ROUNDS", 120);
            }
            loop.awaitRounds(0, 20, 120);
            long before = loop.rounds();
            long jdkBefore = jdk == null ? 0 : jdk.rounds();
            Kernel.run("sh", "-c", target.linkCommand + " down");
            try {
                Thread.sleep(LINK_DOWN_SECONDS * 1000L);
            } finally {
                Kernel.run("sh", "-c", target.linkCommand + " up");
            }
            long during = loop.rounds() - before;
            loop.awaitRounds(loop.rounds(), 20, 120);
            String jdkResult = "";
            if (jdk != null) {
                awaitChildRounds(jdk, jdkBefore + 20, "the JDK's connection did not go on after the link came back");
                jdk.tell("stop");
                String result = jdk.await("RESULT", 120);
                if (!result.startsWith("ok")) {
                    throw new IllegalStateException("the JDK's connection: " + result);
                }
                jdkResult = "; the JDK's provider: " + result;
            }
            String path = Hadronio.path(loop.channel());
            Echo.requireRdma("the connection after the outage", path);
            return String.format(Locale.ROOT, "hadroNIO: %d round trips, %d while the link was cut, still %s%s",
                    loop.rounds(), during, path, jdkResult);
        } finally {
            if (jdk != null) {
                jdk.close();
            }
        }
    }

    private static void awaitChildRounds(HostChild.Process child, long rounds, String failure) throws InterruptedException {
        long deadline = System.nanoTime() + 120_000_000_000L;
        while (child.rounds() < rounds) {
            if (System.nanoTime() > deadline) {
                throw new IllegalStateException(failure);
            }
            Thread.sleep(100);
        }
    }

    /**
     * The interface to the peer goes down for 5 s here ({@code ip link set ... down}) under a child
     * JVM's echo connection on UCX. A software RoCE device fails its queue pairs at once when the
     * route to the peer goes; a hardware one once its retransmissions run out. The connection then
     * fails with an IOException, on this side at once and on the server's once the link is back,
     * with every byte before it delivered once; a JDK connection through the same outage goes on,
     * and new hadroNIO connections upgrade again.
     */
    private static String queuePair(Target target) throws Exception {
        if (!target.faults) {
            throw new Check.Skipped("changes this host's network only with --faults");
        }
        String ethernet = interfaceTo(target);
        try (HostChild.Process child = HostChild.Process.start(true, Collections.singletonMap("hadronio.livenessMillis", "4000"),
                Collections.emptyMap(), "echo", target.at(HostServer.BLOCKING_ECHO));
             HostChild.Process jdk = target.jdkBase > 0 ? HostChild.Process.start(false, Collections.emptyMap(), Collections.emptyMap(),
                     "echo", target.jdkAt(HostServer.BLOCKING_ECHO)) : null) {
            Echo.requireRdma("the child's connection", child.await("PATH", 120));
            int port = Integer.parseInt(child.await("PORT", 10));
            child.await("ROUNDS", 120);
            if (jdk != null) {
                jdk.await("ROUNDS", 120);
            }
            long jdkBefore = jdk == null ? 0 : jdk.rounds();
            long down = System.nanoTime();
            Kernel.run("ip", "link", "set", ethernet, "down");
            String result;
            try {
                result = child.await("RESULT", 30);
            } finally {
                Thread.sleep(Math.max(0, 5000 - (System.nanoTime() - down) / 1_000_000));
                Kernel.run("ip", "link", "set", ethernet, "up");
            }
            double failedAfter = (System.nanoTime() - down) / 1e9;
            if (!result.startsWith("failed") || !result.contains("Exception")) {
                throw new IllegalStateException("the connection over the failed queue pair: " + result);
            }
            long deadline = System.nanoTime() + 60_000_000_000L;
            while (!target.serverPath(port).equals("none")) {
                if (System.nanoTime() > deadline) {
                    throw new IllegalStateException("the server's end of the failed connection is still open 60 s after the link came back");
                }
                Thread.sleep(100);
            }
            String jdkResult = "";
            if (jdk != null) {
                awaitChildRounds(jdk, jdkBefore + 20, "the JDK's connection did not go on after the interface came back");
                jdk.tell("stop");
                jdkResult = jdk.await("RESULT", 120);
                if (!jdkResult.startsWith("ok")) {
                    throw new IllegalStateException("the JDK's connection: " + jdkResult);
                }
            }
            try (SocketChannel again = StreamChecks.upgraded(target, HostServer.BLOCKING_ECHO)) {
                Echo.blocking(again, Echo.payload(1 << 20, 3), 64 * 1024);
            }
            return String.format(Locale.ROOT, "hadroNIO's connection: %s (within %.1f s; the server's end closed too); the JDK's: %s; "
                    + "a new connection upgraded and echoed 1 MiB", result.substring(0, Math.min(result.length(), 160)), failedAfter, jdkResult);
        }
    }

    /**
     * The last check: the server's host powers off while a connection waits in a read; the read
     * fails within {@code hadronio.livenessMillis}.
     */
    static Check poweredOff(Target target) {
        return new Check("poweredOffPeer", "the peer's host powered off", 300, () -> {
            long liveness = Long.getLong("hadronio.livenessMillis", 30_000);
            SocketChannel channel = SocketChannel.open(target.at(HostServer.BLOCKING_ECHO));
            Echo.requireRdma("the connection", Echo.decide(channel));
            AtomicReference<Throwable> ended = new AtomicReference<>();
            long[] at = new long[1];
            Thread reader = new Thread(() -> {
                try {
                    channel.read(ByteBuffer.allocateDirect(64));
                    ended.set(new IllegalStateException("the read returned"));
                } catch (Throwable e) {
                    ended.set(e);
                }
                at[0] = System.nanoTime();
            }, "hosts-waiting-reader");
            reader.start();
            Thread.sleep(500);
            String answer = target.control.ask("poweroff");
            long off = System.nanoTime();
            if (!answer.equals("ok")) {
                throw new IllegalStateException("the server would not power off: " + answer);
            }
            reader.join(liveness + 30_000);
            channel.close();
            if (reader.isAlive()) {
                throw new IllegalStateException("the read still waits " + (liveness / 1000 + 30) + " s after the power-off");
            }
            double seconds = (at[0] - off) / 1e9;
            if (!(ended.get() instanceof IOException) || seconds * 1000 > liveness + 2_000) {
                throw new IllegalStateException(String.format(Locale.ROOT, "after %.1f s: %s", seconds, ended.get()));
            }
            return String.format(Locale.ROOT, "the read failed %.1f s after the power-off (hadronio.livenessMillis=%d): %s",
                    seconds, liveness, ended.get().getMessage());
        });
    }
}
