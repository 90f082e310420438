package dev.hadronio.reliability;

import dev.hadronio.nio.HadronioSocketChannel;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.SocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.ClosedSelectorException;
import java.nio.channels.SelectionKey;
import java.nio.channels.Selector;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.nio.channels.spi.SelectorProvider;
import java.util.Iterator;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;

/**
 * The measured JVM of {@link ChurnTest}: a server and a client in this one JVM, both on the JVM-wide
 * provider, run connect/transfer/close cycles, and the JVM reports its {@link Footprint} after a
 * warm-up batch and after the measured batch.
 *
 * <pre>
 * ChurnProgram &lt;blocking|selector&gt; &lt;cycles&gt; &lt;warmup cycles&gt;
 * </pre>
 *
 * <p>One cycle: the client connects, writes a 12-byte header (payload length, who closes first, cycle
 * number) and a payload of 1 B .. 128 KiB (log-uniform, cut from a random pool), the server echoes
 * the payload and the client checks it byte for byte. On even cycles the client closes first and the
 * server must then read end of stream; on odd cycles the server closes right after its write (so its
 * close must still deliver the echo) and the client must read the echo and then end of stream.
 *
 * <p>{@code blocking}: one client thread, one server thread, one connection at a time.
 * {@code selector}: a server selector thread and a client selector (this thread) with up to
 * {@link #CONCURRENT} connections in flight, non-blocking connect; every {@link #SELECTOR_ROTATION}
 * cycles the client lets its connections finish, closes its selector and opens a new one.
 *
 * <p>Prints {@code BEFORE <footprint>} (after the warm-up, garbage collected), after each tenth of the
 * cycles {@code PROGRESS <cycles so far> <footprint>} (not collected), {@code CYCLES <n> <ms>},
 * {@code AFTER <footprint>} (after the measured batch, once the server has closed every connection
 * and the descriptor, mapping and thread counts are back at their starting level or 10 s have passed), and
 * {@code NEWFDS} and {@code NEWMAPS} with the kinds of descriptor and of mapping whose count changed if there
 * are more than at {@code BEFORE}, and
 * exits 0. On a wrong byte, a wrong end of stream or an exception it prints {@code FAILED ...} and
 * exits 1; if no cycle completes for {@link #STUCK_SECONDS} it prints {@code STUCK} and every thread's
 * stack and exits 2.
 */
public final class ChurnProgram {
    static final int HEADER = 12;
    static final int MAX_PAYLOAD = 128 * 1024;
    static final int POOL = 1 << 20;
    static final int CONCURRENT = 4;
    static final int SELECTOR_ROTATION = 20;
    static final long STUCK_SECONDS = 60;
    static final int PROGRESS_SLICES = 10;

    private final SelectorProvider provider = SelectorProvider.provider();
    private final ByteBuffer pool;
    /**
     * The blocking client's receive buffer, reused: a direct buffer per cycle would be freed only when
     * the collector happens to run, and its native memory would count as growth.
     */
    private final ByteBuffer receiveBuffer = ByteBuffer.allocateDirect(MAX_PAYLOAD);
    private final AtomicLong completed = new AtomicLong();
    private final AtomicLong serverClosed = new AtomicLong();
    private final AtomicReference<Throwable> serverFailure = new AtomicReference<>();

    private ChurnProgram() {
        SplittableRandom random = new SplittableRandom(20240601);
        pool = ByteBuffer.allocateDirect(POOL + MAX_PAYLOAD);
        while (pool.remaining() >= 8) {
            pool.putLong(random.nextLong());
        }
        pool.clear();
    }

    public static void main(String[] args) {
        ChildJvm.runMain(() -> {
            boolean selector = args[0].equals("selector");
            int cycles = Integer.parseInt(args[1]);
            int warmup = Integer.parseInt(args[2]);
            new ChurnProgram().run(selector, cycles, warmup);
        });
    }

    /**
     * Run in blocking mode right before each measurement: three connections used at once until
     * they went over to UCX, and closed. A blocking channel has a UCX worker of its own (made on
     * the hadronio-lanes thread while its first bytes go over TCP, unless one is kept), and the
     * workers of closed channels are kept for the next ones up to {@code hadronio.spareWorkers};
     * how many are kept depends on how many channels were ever open at once with their workers
     * and on whether a kept worker was still fit to serve (one whose peer worker went away
     * abruptly is not), which the cycles leave to chance. Filled before both measurements, the
     * cache holds as many workers each time, so what grows is what the cycles left behind.
     */
    private void fillWorkerCache() throws IOException {
        try (ServerSocketChannel listener = provider.openServerSocketChannel()) {
            listener.bind(new InetSocketAddress("127.0.0.1", 0));
            SocketChannel[] clients = new SocketChannel[3];
            SocketChannel[] servers = new SocketChannel[3];
            for (int i = 0; i < clients.length; i++) {
                clients[i] = provider.openSocketChannel();
                clients[i].connect(listener.getLocalAddress());
                servers[i] = listener.accept();
            }
            long deadline = System.nanoTime() + 10_000_000_000L;
            for (int i = 0; i < clients.length; i++) {
                do {
                    ByteBuffer one = ByteBuffer.allocate(1);
                    clients[i].write(one);
                    one.clear();
                    while (one.hasRemaining()) {
                        servers[i].read(one);
                    }
                    one.clear();
                    servers[i].write(one);
                    one.clear();
                    while (one.hasRemaining()) {
                        clients[i].read(one);
                    }
                } while (!(upgraded(clients[i]) && upgraded(servers[i])) && System.nanoTime() - deadline < 0);
            }
            for (int i = 0; i < clients.length; i++) {
                clients[i].close();
                servers[i].close();
            }
        }
    }

    /** Whether the channel went over to UCX (always, for the JDK's: it has nothing to wait for). */
    private static boolean upgraded(SocketChannel channel) throws IOException {
        return !(channel instanceof HadronioSocketChannel) || ((HadronioSocketChannel) channel).transportDescription().startsWith("ucx");
    }

    private void run(boolean selectorMode, int cycles, int warmup) throws Exception {
        startWatchdog();
        ServerSocketChannel server = provider.openServerSocketChannel();
        server.bind(new InetSocketAddress("127.0.0.1", 0), 64);
        SocketAddress address = server.getLocalAddress();
        Selector serverSelector = null;
        Thread serverThread;
        if (selectorMode) {
            serverSelector = provider.openSelector();
            server.configureBlocking(false);
            server.register(serverSelector, SelectionKey.OP_ACCEPT);
            Selector s = serverSelector;
            serverThread = new Thread(() -> guard(() -> selectorServer(s)), "churn-server");
        } else {
            serverThread = new Thread(() -> guard(() -> blockingServer(server)), "churn-server");
        }
        serverThread.setDaemon(true);
        serverThread.start();

        runCycles(selectorMode, address, 0, warmup);
        awaitServer(warmup);
        if (!selectorMode) {
            fillWorkerCache();
        }
        Footprint before = Footprint.measure(true);
        Map<String, Integer> descriptorsBefore = Footprint.descriptorKinds();
        Map<String, Integer> mappingsBefore = Footprint.mappingKinds();
        System.out.println("WARMUP " + warmup);
        System.out.println("BEFORE " + before.encode());
        System.out.flush();

        long start = System.nanoTime();
        for (int slice = 1; slice <= PROGRESS_SLICES; slice++) {
            int from = warmup + (int) ((long) cycles * (slice - 1) / PROGRESS_SLICES);
            int to = warmup + (int) ((long) cycles * slice / PROGRESS_SLICES);
            runCycles(selectorMode, address, from, to);
            System.out.println("PROGRESS " + (to - warmup) + " " + Footprint.measure(false).encode());
            System.out.flush();
        }
        awaitServer(warmup + cycles);
        long millis = (System.nanoTime() - start) / 1_000_000;
        if (!selectorMode) {
            fillWorkerCache();
        }
        Footprint after = Footprint.measure(true);
        long settleUntil = System.nanoTime() + 10_000_000_000L;
        while ((after.fds > before.fds || after.threads > before.threads || after.mappings > before.mappings)
                && System.nanoTime() < settleUntil) {
            Thread.sleep(100);
            after = Footprint.measure(true);
        }
        System.out.println("CYCLES " + cycles + " " + millis);
        System.out.println("AFTER " + after.encode());
        if (after.fds > before.fds) {
            System.out.println("NEWFDS " + Footprint.kindChange(descriptorsBefore, Footprint.descriptorKinds()));
        }
        if (after.mappings > before.mappings) {
            System.out.println("NEWMAPS " + Footprint.kindChange(mappingsBefore, Footprint.mappingKinds()));
        }
        System.out.flush();
        server.close();
        if (serverSelector != null) {
            serverSelector.close();
        }
    }

    // --- cycles ---------------------------------------------------------------------------------

    /** Length, who closes first and the payload's offset in the pool, for cycle {@code i}. */
    static final class Cycle {
        final int number;
        final int length;
        final boolean serverClosesFirst;
        final int offset;

        Cycle(int number) {
            SplittableRandom random = new SplittableRandom(0x5DEECE66DL * (number + 1));
            this.number = number;
            this.length = (int) Math.min(MAX_PAYLOAD, Math.max(1, Math.round(Math.exp(random.nextDouble()
                    * Math.log(MAX_PAYLOAD)))));
            this.serverClosesFirst = (number & 1) == 1;
            this.offset = random.nextInt(POOL);
        }

        ByteBuffer header() {
            ByteBuffer header = ByteBuffer.allocate(HEADER);
            header.putInt(length).putInt(serverClosesFirst ? 1 : 0).putInt(number).flip();
            return header;
        }

        ByteBuffer payload(ByteBuffer pool) {
            ByteBuffer slice = pool.duplicate();
            slice.limit(offset + length).position(offset);
            return slice.slice();
        }

        void check(ByteBuffer pool, ByteBuffer received) {
            received.flip();
            int at = payload(pool).mismatch(received);
            if (at >= 0) {
                throw new IllegalStateException("cycle " + number + ": echo differs at byte " + at + " of " + length);
            }
        }
    }

    private void runCycles(boolean selectorMode, SocketAddress address, int from, int to) throws Exception {
        if (selectorMode) {
            selectorClient(address, from, to);
        } else {
            for (int i = from; i < to; i++) {
                blockingCycle(address, new Cycle(i));
                completed.incrementAndGet();
            }
        }
        checkServer();
    }

    private void blockingCycle(SocketAddress address, Cycle cycle) throws IOException {
        ByteBuffer received = receiveBuffer;
        received.clear().limit(cycle.length);
        try (SocketChannel channel = provider.openSocketChannel()) {
            channel.connect(address);
            ByteBuffer[] out = {cycle.header(), cycle.payload(pool)};
            while (out[1].hasRemaining()) {
                channel.write(out);
            }
            while (received.hasRemaining()) {
                if (channel.read(received) < 0) {
                    throw new IllegalStateException("cycle " + cycle.number + ": end of stream after "
                            + received.position() + " of " + cycle.length + " echoed bytes");
                }
            }
            cycle.check(pool, received);
            if (cycle.serverClosesFirst) {
                int n = channel.read(ByteBuffer.allocate(1));
                if (n != -1) {
                    throw new IllegalStateException("cycle " + cycle.number + ": read " + n
                            + " after the echo of a server that closed; expected end of stream");
                }
            }
        }
    }

    private void blockingServer(ServerSocketChannel server) throws IOException {
        ByteBuffer header = ByteBuffer.allocate(HEADER);
        ByteBuffer data = ByteBuffer.allocateDirect(MAX_PAYLOAD);
        ByteBuffer probe = ByteBuffer.allocate(1);
        while (true) {
            SocketChannel channel;
            try {
                channel = server.accept();
            } catch (IOException e) {
                if (!server.isOpen()) {
                    return;
                }
                throw e;
            }
            try {
                header.clear();
                readFully(channel, header);
                int length = header.getInt(0);
                boolean serverClosesFirst = header.getInt(4) == 1;
                int number = header.getInt(8);
                data.clear().limit(length);
                readFully(channel, data);
                data.flip();
                while (data.hasRemaining()) {
                    channel.write(data);
                }
                if (!serverClosesFirst) {
                    probe.clear();
                    int n = channel.read(probe);
                    if (n != -1) {
                        throw new IllegalStateException("server, cycle " + number + ": read " + n
                                + " where the client's close should give end of stream");
                    }
                }
            } finally {
                channel.close();
                serverClosed.incrementAndGet();
            }
        }
    }

    private static void readFully(SocketChannel channel, ByteBuffer buffer) throws IOException {
        while (buffer.hasRemaining()) {
            if (channel.read(buffer) < 0) {
                throw new IllegalStateException("server: end of stream with " + buffer.remaining() + " bytes missing");
            }
        }
    }

    // --- selector mode ----------------------------------------------------------------------------

    /** A server-side connection in selector mode. */
    static final class ServerConn {
        final ByteBuffer header = ByteBuffer.allocate(HEADER);
        ByteBuffer data;
        boolean serverClosesFirst;
        int number;
        boolean awaitingEnd;
    }

    private void selectorServer(Selector selector) throws IOException {
        ByteBuffer probe = ByteBuffer.allocate(1);
        try {
            while (true) {
                selector.select();
                Iterator<SelectionKey> keys = selector.selectedKeys().iterator();
                while (keys.hasNext()) {
                    SelectionKey key = keys.next();
                    keys.remove();
                    if (!key.isValid()) {
                        continue;
                    }
                    if (key.isAcceptable()) {
                        ServerSocketChannel listener = (ServerSocketChannel) key.channel();
                        SocketChannel accepted;
                        while ((accepted = listener.accept()) != null) {
                            accepted.configureBlocking(false);
                            accepted.register(selector, SelectionKey.OP_READ, new ServerConn());
                        }
                        continue;
                    }
                    serveKey(key, probe);
                }
            }
        } catch (ClosedSelectorException e) {
            // the main thread closed the selector: done
        }
    }

    private void serveKey(SelectionKey key, ByteBuffer probe) throws IOException {
        SocketChannel channel = (SocketChannel) key.channel();
        ServerConn conn = (ServerConn) key.attachment();
        if (conn.awaitingEnd) {
            probe.clear();
            int n = channel.read(probe);
            if (n == 0) {
                return;
            }
            if (n != -1) {
                throw new IllegalStateException("server, cycle " + conn.number + ": read " + n
                        + " where the client's close should give end of stream");
            }
            closeServerSide(key);
            return;
        }
        if (key.isReadable()) {
            if (conn.data == null) {
                if (channel.read(conn.header) < 0) {
                    throw new IllegalStateException("server: end of stream inside a header");
                }
                if (conn.header.hasRemaining()) {
                    return;
                }
                conn.data = ByteBuffer.allocate(conn.header.getInt(0));
                conn.serverClosesFirst = conn.header.getInt(4) == 1;
                conn.number = conn.header.getInt(8);
            }
            if (conn.data.hasRemaining() && channel.read(conn.data) < 0) {
                throw new IllegalStateException("server, cycle " + conn.number + ": end of stream inside a payload");
            }
            if (conn.data.hasRemaining()) {
                return;
            }
            conn.data.flip();
            key.interestOps(SelectionKey.OP_WRITE);
        }
        if (key.isValid() && (key.interestOps() & SelectionKey.OP_WRITE) != 0) {
            channel.write(conn.data);
            if (conn.data.hasRemaining()) {
                return;
            }
            if (conn.serverClosesFirst) {
                closeServerSide(key);
            } else {
                conn.awaitingEnd = true;
                key.interestOps(SelectionKey.OP_READ);
            }
        }
    }

    private void closeServerSide(SelectionKey key) throws IOException {
        key.cancel();
        key.channel().close();
        serverClosed.incrementAndGet();
    }

    /** A client-side connection in selector mode. */
    static final class ClientConn {
        final Cycle cycle;
        final ByteBuffer[] out;
        final ByteBuffer received;
        boolean awaitingEnd;

        ClientConn(Cycle cycle, ByteBuffer pool) {
            this.cycle = cycle;
            this.out = new ByteBuffer[] {cycle.header(), cycle.payload(pool)};
            this.received = ByteBuffer.allocate(cycle.length);
        }
    }

    private void selectorClient(SocketAddress address, int from, int to) throws IOException {
        Selector selector = provider.openSelector();
        ByteBuffer probe = ByteBuffer.allocate(1);
        int next = from;
        int inFlight = 0;
        int done = 0;
        int sinceRotation = 0;
        try {
            while (done < to - from) {
                while (inFlight < CONCURRENT && next < to && sinceRotation < SELECTOR_ROTATION) {
                    SocketChannel channel = provider.openSocketChannel();
                    channel.configureBlocking(false);
                    ClientConn conn = new ClientConn(new Cycle(next++), pool);
                    boolean connected = channel.connect(address);
                    channel.register(selector, connected ? SelectionKey.OP_WRITE : SelectionKey.OP_CONNECT, conn);
                    inFlight++;
                    sinceRotation++;
                }
                if (inFlight == 0 && sinceRotation >= SELECTOR_ROTATION) {
                    selector.close();
                    selector = provider.openSelector();
                    sinceRotation = 0;
                    continue;
                }
                selector.select(1000);
                checkServer();
                Iterator<SelectionKey> keys = selector.selectedKeys().iterator();
                while (keys.hasNext()) {
                    SelectionKey key = keys.next();
                    keys.remove();
                    if (key.isValid() && clientKey(key, probe)) {
                        key.cancel();
                        key.channel().close();
                        inFlight--;
                        done++;
                        completed.incrementAndGet();
                    }
                }
            }
        } finally {
            selector.close();
        }
    }

    /** Handles one ready client key; true when its cycle is over and the channel should close. */
    private boolean clientKey(SelectionKey key, ByteBuffer probe) throws IOException {
        SocketChannel channel = (SocketChannel) key.channel();
        ClientConn conn = (ClientConn) key.attachment();
        if (key.isConnectable()) {
            if (!channel.finishConnect()) {
                return false;
            }
            key.interestOps(SelectionKey.OP_WRITE);
        }
        if ((key.interestOps() & SelectionKey.OP_WRITE) != 0) {
            channel.write(conn.out);
            if (conn.out[1].hasRemaining()) {
                return false;
            }
            key.interestOps(SelectionKey.OP_READ);
            return false;
        }
        if (!key.isReadable()) {
            return false;
        }
        if (conn.awaitingEnd) {
            probe.clear();
            int n = channel.read(probe);
            if (n == 0) {
                return false;
            }
            if (n != -1) {
                throw new IllegalStateException("cycle " + conn.cycle.number + ": read " + n
                        + " after the echo of a server that closed; expected end of stream");
            }
            return true;
        }
        if (channel.read(conn.received) < 0) {
            throw new IllegalStateException("cycle " + conn.cycle.number + ": end of stream after "
                    + conn.received.position() + " of " + conn.cycle.length + " echoed bytes");
        }
        if (conn.received.hasRemaining()) {
            return false;
        }
        conn.cycle.check(pool, conn.received);
        if (conn.cycle.serverClosesFirst) {
            conn.awaitingEnd = true;
            return false;
        }
        return true;
    }

    // --- supervision ------------------------------------------------------------------------------

    interface Body {
        void run() throws Exception;
    }

    private void guard(Body body) {
        try {
            body.run();
        } catch (Throwable t) {
            serverFailure.compareAndSet(null, t);
        }
    }

    private void checkServer() {
        Throwable t = serverFailure.get();
        if (t != null) {
            throw new IllegalStateException("server failed: " + t, t);
        }
    }

    /** Waits until the server has closed {@code count} connections (bounded by the watchdog). */
    private void awaitServer(long count) throws InterruptedException {
        while (serverClosed.get() < count) {
            checkServer();
            Thread.sleep(1);
        }
    }

    private void startWatchdog() {
        Thread watchdog = new Thread(() -> {
            long last = -1;
            long lastChange = System.nanoTime();
            while (true) {
                try {
                    Thread.sleep(1000);
                } catch (InterruptedException e) {
                    return;
                }
                long now = completed.get() + serverClosed.get();
                if (now != last) {
                    last = now;
                    lastChange = System.nanoTime();
                } else if (System.nanoTime() - lastChange > STUCK_SECONDS * 1_000_000_000L) {
                    System.out.println("STUCK no cycle completed for " + STUCK_SECONDS + " s (client "
                            + completed.get() + ", server " + serverClosed.get() + ")");
                    dumpThreads();
                    System.out.flush();
                    Runtime.getRuntime().halt(2);
                }
            }
        }, "churn-watchdog");
        watchdog.setDaemon(true);
        watchdog.start();
    }

    static void dumpThreads() {
        for (Map.Entry<Thread, StackTraceElement[]> entry : Thread.getAllStackTraces().entrySet()) {
            System.out.println("thread \"" + entry.getKey().getName() + "\" " + entry.getKey().getState());
            for (StackTraceElement frame : entry.getValue()) {
                System.out.println("    at " + frame);
            }
        }
    }
}
