package dev.hadronio.reliability;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertTrue;
import static org.junit.Assert.fail;

import dev.hadronio.nio.HadronioSocketChannel;
import dev.hadronio.reliability.Reliability.Mode;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.SelectionKey;
import java.nio.channels.Selector;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.nio.channels.spi.SelectorProvider;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.Rule;
import org.junit.Test;
import org.junit.rules.TestRule;
import org.junit.runner.RunWith;
import org.junit.runners.Parameterized;
import org.junit.runners.Parameterized.Parameter;
import org.junit.runners.Parameterized.Parameters;

/**
 * Faults: a peer JVM killed with SIGKILL in the middle of a transfer. The survivor (this
 * JVM) must see an {@code IOException}, or -1 where the JDK gives end of stream, within 2 s of the
 * kill (measured from {@code destroyForcibly()}), must never hang, and in selector mode its selector
 * must keep serving its other connections (an echo connection in this JVM, checked before and after).
 *
 * <p>Rows: provider (the JDK's is the oracle) x survivor mode (blocking thread, selector) x
 * direction ({@code survivorReads}: the survivor accepted the connection and reads what the peer
 * writes; {@code survivorWrites}: the survivor connected and writes what the peer reads). Writes are
 * of random lengths from 1 byte to 1 MiB, so both the staged and the large-message paths are in use
 * when the peer dies. With hadroNIO the connection must have been upgraded to UCX before the kill.
 */
@RunWith(Parameterized.class)
public class PeerKillTest {
    /** The bound for noticing the kill, measured from it. */
    static final long DETECT_BOUND_MILLIS = 2000;
    /** Beyond this the survivor is considered hung (only bounds the test). */
    static final long HANG_MILLIS = 15_000;
    /** Transferred before the kill (mid-transfer, upgraded). */
    static final long BEFORE_KILL = 16L << 20;


    /** How often every row runs (a kill lands at a random point of the transfer each time). */
    static final int ROUNDS = Integer.getInteger("hadronio.reliability.peerKillRounds", 1);

    @Parameters(name = "{0}-{1}-{2}#{3}")
    public static List<Object[]> parameters() {
        List<Object[]> rows = new ArrayList<>();
        for (int round = 1; round <= ROUNDS; round++) {
            for (Reliability.Provider provider : Reliability.Provider.values()) {
                for (Mode mode : Mode.values()) {
                    for (String direction : new String[] {"survivorReads", "survivorWrites"}) {
                        rows.add(new Object[] {provider, mode, direction, round});
                    }
                }
            }
        }
        return rows;
    }

    @Parameter(0)
    public Reliability.Provider provider;
    @Parameter(1)
    public Mode mode;
    @Parameter(2)
    public String direction;
    @Parameter(3)
    public int round;

    private final Resources resources = new Resources();

    @Rule
    public final TestRule rules = resources.withTimeout(90);

    /** What the survivor saw on the victim connection. */
    static final class Outcome {
        final AtomicLong bytes = new AtomicLong();
        final AtomicReference<String> result = new AtomicReference<>();
        volatile long nanos;
        volatile SocketChannel channel;

        /** Records the first outcome; its time is visible once {@code result} is. */
        synchronized void finish(String text) {
            if (result.get() == null) {
                nanos = System.nanoTime();
                result.set(text);
            }
        }
    }

    @Test
    public void killedPeerIsDetected() throws Exception {
        SelectorProvider sp = provider.get();
        boolean reads = direction.equals("survivorReads");
        Outcome outcome = new Outcome();
        Echo echo = null;
        Thread survivor;
        ChildJvm peer;
        Selector selector = null;

        if (mode == Mode.SELECTOR) {
            selector = resources.add(sp.openSelector());
            echo = resources.add(new Echo(sp, selector));
        }
        if (reads) {
            ServerSocketChannel server = resources.add(sp.openServerSocketChannel());
            server.bind(new InetSocketAddress("127.0.0.1", 0));
            int port = ((InetSocketAddress) server.getLocalAddress()).getPort();
            peer = resources.add(new ChildJvm.Builder("peer", StreamPeer.class).provider(provider)
                    .args("connect", "127.0.0.1", port, "write").start());
            SocketChannel accepted = Reliability.acceptWithin(server, peer, 30);
            resources.add(accepted);
            outcome.channel = accepted;
        } else {
            peer = resources.add(new ChildJvm.Builder("peer", StreamPeer.class).provider(provider)
                    .args("listen", "127.0.0.1", 0, "read").start());
            int port = Integer.parseInt(peer.awaitValue("PORT", 30));
            SocketChannel client = resources.add(sp.openSocketChannel());
            client.connect(new InetSocketAddress("127.0.0.1", port));
            outcome.channel = client;
        }

        if (mode == Mode.BLOCKING) {
            survivor = new Thread(() -> blockingSurvivor(outcome, reads), "survivor");
        } else {
            Selector s = selector;
            Echo e = echo;
            survivor = new Thread(() -> selectorSurvivor(s, e, outcome, reads), "survivor");
        }
        survivor.setDaemon(true);
        survivor.start();
        resources.add(() -> outcome.channel.close());

        if (echo != null) {
            echo.startClient();
            assertTrue("the selector serves the echo connection before the kill\n" + echo.describe(),
                    echo.awaitRoundTrips(20, 20_000));
        }
        // The kill lands mid-transfer, and with hadroNIO once the upgrade finished: on a loaded
        // host the transfer runs ahead of the upgrade, which needs both JVMs' turns.
        long deadline = System.nanoTime() + 30_000_000_000L;
        while ((outcome.bytes.get() < BEFORE_KILL || !overUcx(outcome)) && outcome.result.get() == null
                && System.nanoTime() < deadline) {
            Thread.sleep(5);
        }
        assertTrue("transfer before the kill: " + outcome.bytes.get() + " bytes, " + outcome.result.get() + "\n"
                + peer.output(), outcome.bytes.get() >= BEFORE_KILL && outcome.result.get() == null);
        if (provider == Reliability.Provider.HADRONIO) {
            String path = ((HadronioSocketChannel) outcome.channel).transportDescription();
            assertTrue("the connection runs over UCX before the kill: " + path, path.startsWith("ucx"));
        }

        long killed = System.nanoTime();
        peer.process().destroyForcibly();
        long waitUntil = killed + HANG_MILLIS * 1_000_000;
        while (outcome.result.get() == null && System.nanoTime() < waitUntil) {
            Thread.sleep(1);
        }
        String name = getClass().getSimpleName() + "[" + provider + "-" + mode + "-" + direction + "]";
        if (outcome.result.get() == null) {
            StringBuilder stack = new StringBuilder();
            for (StackTraceElement element : survivor.getStackTrace()) {
                stack.append("\n    at ").append(element);
            }
            Reliability.figure(name, "detection after SIGKILL", "none within " + HANG_MILLIS, "ms");
            fail("the survivor saw neither an IOException nor end of stream within " + HANG_MILLIS
                    + " ms of the kill (it hangs); survivor thread " + survivor.getState() + ":" + stack);
        }
        assertTrue("the survivor saw " + outcome.result.get() + " before the kill",
                outcome.nanos - killed >= 0);
        double millis = (outcome.nanos - killed) / 1e6;
        Reliability.figure(name, "detection after SIGKILL", millis, "ms (" + outcome.result.get() + ")");
        String result = outcome.result.get();
        if (reads) {
            assertTrue("a reader sees an IOException or end of stream: " + result,
                    result.startsWith("EOF") || result.startsWith("IOException"));
        } else {
            assertTrue("a writer sees an IOException: " + result, result.startsWith("IOException"));
        }
        assertTrue("detected " + millis + " ms after the kill (bound " + DETECT_BOUND_MILLIS + " ms): " + result,
                millis <= DETECT_BOUND_MILLIS);
        if (echo != null) {
            long before = echo.roundTrips.get();
            if (!echo.awaitRoundTrips(before + 50, 10_000)) {
                fail("the selector keeps serving its other connection after the kill\n" + echo.describe()
                        + threadStacks());
            }
            assertTrue("survivor selector thread alive", survivor.isAlive());
            assertEquals("echo failures", null, echo.failure.get());
        }
    }

    /** Whether the victim connection runs over UCX; always true with the JDK's provider. */
    private static boolean overUcx(Outcome outcome) throws IOException {
        return !(outcome.channel instanceof HadronioSocketChannel)
                || ((HadronioSocketChannel) outcome.channel).transportDescription().startsWith("ucx");
    }

    private static ByteBuffer randomBuffer() {
        SplittableRandom random = new SplittableRandom(7);
        ByteBuffer buffer = ByteBuffer.allocateDirect(1 << 20);
        while (buffer.hasRemaining()) {
            buffer.putLong(random.nextLong());
        }
        return buffer;
    }

    private static String describe(Throwable t) {
        String kind = t instanceof IOException ? "IOException" : "UNEXPECTED";
        return kind + " " + t;
    }

    static void blockingSurvivor(Outcome outcome, boolean reads) {
        SocketChannel channel = outcome.channel;
        SplittableRandom random = new SplittableRandom(3);
        ByteBuffer buffer = reads ? ByteBuffer.allocateDirect(256 * 1024) : randomBuffer();
        try {
            while (true) {
                if (reads) {
                    buffer.clear();
                    int n = channel.read(buffer);
                    if (n < 0) {
                        outcome.finish("EOF");
                        return;
                    }
                    outcome.bytes.addAndGet(n);
                } else {
                    buffer.clear().limit(1 + random.nextInt(1 << 20));
                    while (buffer.hasRemaining()) {
                        outcome.bytes.addAndGet(channel.write(buffer));
                    }
                }
            }
        } catch (Throwable t) {
            outcome.finish(describe(t));
        }
    }

    static void selectorSurvivor(Selector selector, Echo echo, Outcome outcome, boolean reads) {
        SplittableRandom random = new SplittableRandom(3);
        ByteBuffer buffer = reads ? ByteBuffer.allocateDirect(256 * 1024) : randomBuffer();
        buffer.limit(0);
        try {
            SocketChannel victim = outcome.channel;
            victim.configureBlocking(false);
            SelectionKey victimKey = victim.register(selector, reads ? SelectionKey.OP_READ : SelectionKey.OP_WRITE);
            while (selector.isOpen()) {
                selector.select(100);
                Iterator<SelectionKey> keys = selector.selectedKeys().iterator();
                while (keys.hasNext()) {
                    SelectionKey key = keys.next();
                    keys.remove();
                    if (key == victimKey) {
                        try {
                            if (reads) {
                                while (true) {
                                    buffer.clear();
                                    int n = victim.read(buffer);
                                    if (n < 0) {
                                        outcome.finish("EOF");
                                        key.cancel();
                                        victim.close();
                                        break;
                                    }
                                    if (n == 0) {
                                        break;
                                    }
                                    outcome.bytes.addAndGet(n);
                                }
                            } else {
                                while (true) {
                                    if (!buffer.hasRemaining()) {
                                        buffer.clear().limit(1 + random.nextInt(1 << 20));
                                    }
                                    int n = victim.write(buffer);
                                    outcome.bytes.addAndGet(n);
                                    if (buffer.hasRemaining()) {
                                        break;
                                    }
                                }
                            }
                        } catch (IOException e) {
                            outcome.finish(describe(e));
                            key.cancel();
                            victim.close();
                        }
                    } else if (key.isValid()) {
                        echo.handle(key);
                    }
                }
            }
        } catch (Throwable t) {
            outcome.finish("selector loop died: " + t);
            echo.failure.compareAndSet(null, "selector loop died: " + t);
        }
    }

    /**
     * A second connection served by the survivor's selector: a listener registered for OP_ACCEPT and
     * an echo handler, plus a blocking client thread in this JVM that does 64-byte round trips.
     */
    static final class Echo implements AutoCloseable {
        final SelectorProvider provider;
        final ServerSocketChannel server;
        final AtomicLong roundTrips = new AtomicLong();
        final AtomicReference<String> failure = new AtomicReference<>();
        volatile boolean stop;
        Thread client;
        SocketChannel clientChannel;

        Echo(SelectorProvider provider, Selector selector) throws IOException {
            this.provider = provider;
            server = provider.openServerSocketChannel();
            server.bind(new InetSocketAddress("127.0.0.1", 0));
            server.configureBlocking(false);
            server.register(selector, SelectionKey.OP_ACCEPT);
        }

        void handle(SelectionKey key) throws IOException {
            if (key.isAcceptable()) {
                SocketChannel accepted = server.accept();
                if (accepted != null) {
                    accepted.configureBlocking(false);
                    accepted.register(key.selector(), SelectionKey.OP_READ, ByteBuffer.allocate(4096));
                }
                return;
            }
            SocketChannel channel = (SocketChannel) key.channel();
            ByteBuffer pending = (ByteBuffer) key.attachment();
            try {
                if (key.isReadable() && pending.position() == 0) {
                    int n = channel.read(pending);
                    if (n < 0) {
                        key.cancel();
                        channel.close();
                        return;
                    }
                }
                pending.flip();
                channel.write(pending);
                pending.compact();
                key.interestOps(pending.position() > 0 ? SelectionKey.OP_WRITE : SelectionKey.OP_READ);
            } catch (IOException e) {
                failure.compareAndSet(null, "echo server: " + e);
                key.cancel();
                channel.close();
            }
        }

        void startClient() throws IOException {
            clientChannel = provider.openSocketChannel();
            clientChannel.connect(server.getLocalAddress());
            client = new Thread(() -> {
                ByteBuffer out = ByteBuffer.allocate(64);
                ByteBuffer in = ByteBuffer.allocate(64);
                try {
                    while (!stop) {
                        out.clear();
                        out.putLong(0, roundTrips.get());
                        while (out.hasRemaining()) {
                            clientChannel.write(out);
                        }
                        in.clear();
                        while (in.hasRemaining()) {
                            if (clientChannel.read(in) < 0) {
                                throw new IOException("echo server closed");
                            }
                        }
                        if (in.getLong(0) != out.getLong(0)) {
                            throw new IOException("echo mismatch");
                        }
                        roundTrips.incrementAndGet();
                        Thread.sleep(1);
                    }
                } catch (IOException | InterruptedException e) {
                    if (!stop) {
                        failure.compareAndSet(null, "echo client: " + e);
                    }
                }
            }, "echo-client");
            client.setDaemon(true);
            client.start();
        }

        boolean awaitRoundTrips(long count, long millis) throws InterruptedException {
            long deadline = System.nanoTime() + millis * 1_000_000;
            while (roundTrips.get() < count && System.nanoTime() < deadline && failure.get() == null) {
                Thread.sleep(2);
            }
            return roundTrips.get() >= count;
        }

        String describe() {
            return "echo round trips " + roundTrips.get() + ", failure " + failure.get();
        }

        @Override
        public void close() throws IOException {
            stop = true;
            if (clientChannel != null) {
                clientChannel.close();
            }
            server.close();
        }
    }

    /** The stacks of this JVM's threads, for a failure that looks like a hang. */
    static String threadStacks() {
        StringBuilder text = new StringBuilder("\nthreads:");
        for (java.util.Map.Entry<Thread, StackTraceElement[]> entry : Thread.getAllStackTraces().entrySet()) {
            text.append("\n  ").append(entry.getKey().getName()).append(' ').append(entry.getKey().getState());
            for (StackTraceElement element : entry.getValue()) {
                text.append("\n      at ").append(element);
            }
        }
        return text.toString();
    }
}
