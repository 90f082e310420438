package dev.hadronio.conformance;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertNotNull;
import static org.junit.Assert.assertSame;
import static org.junit.Assert.assertThrows;
import static org.junit.Assert.assertTrue;
import static org.junit.Assert.fail;

import java.io.ByteArrayOutputStream;
import java.io.Closeable;
import java.io.EOFException;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.SelectionKey;
import java.nio.channels.Selector;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.nio.channels.spi.SelectorProvider;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Deque;
import java.util.HashSet;
import java.util.List;
import java.util.Random;
import java.util.Set;
import java.util.concurrent.Callable;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;
import java.util.zip.CRC32;
import org.junit.After;
import org.junit.Before;
import org.junit.Rule;
import org.junit.function.ThrowingRunnable;
import org.junit.rules.Timeout;
import org.junit.runners.Parameterized.Parameter;

/**
 * Base of the conformance tests: the provider parameter, a per-test timeout, resource and thread cleanup,
 * and helpers to open channels through the provider under test (never through the JVM-wide
 * {@code SocketChannel.open()}), to move and check data, and to wait a bounded time.
 *
 * <p>Subclasses are {@code @RunWith(Parameterized.class)} and declare
 * {@code @Parameters(name = "{0}") public static List<Object[]> parameters()} returning
 * {@link Providers#parameters()} (or rows that start with a provider).
 */
public abstract class AbstractConformanceTest {

    /** Longest bounded wait for a condition; it only bounds a hang and is never a timing assertion. */
    static final long WAIT_SECONDS = 20;

    /** Every test's upper bound. */
    @Rule
    public final Timeout timeout = Timeout.seconds(60);

    /** The provider under test; its name is the test name's prefix. */
    @Parameter(0)
    public Providers.Target target;

    /** {@code target.get()}, set before each test. */
    protected SelectorProvider provider;

    private final Deque<Closeable> resources = new ArrayDeque<>();
    private final List<Background<?>> helpers = new ArrayList<>();

    @Before
    public final void createProvider() {
        provider = target.get();
    }

    @After
    public final void releaseResources() {
        synchronized (resources) {
            while (!resources.isEmpty()) {
                closeQuietly(resources.pop());
            }
        }
        synchronized (helpers) {
            for (Background<?> helper : helpers) {
                helper.stopQuietly();
            }
        }
    }

    // ---------------------------------------------------------------------------------------------------
    // channels

    /** 127.0.0.1, port 0. */
    static InetSocketAddress loopbackAnyPort() {
        return new InetSocketAddress("127.0.0.1", 0);
    }

    /** Registers {@code resource} to be closed after the test (in reverse order) and returns it. */
    protected <T extends Closeable> T track(T resource) {
        synchronized (resources) {
            resources.push(resource);
        }
        return resource;
    }

    /** A new, unbound server channel of the provider under test. */
    protected ServerSocketChannel newServer() throws IOException {
        return track(provider.openServerSocketChannel());
    }

    /** A new server channel bound to 127.0.0.1, port 0. */
    protected ServerSocketChannel openServer() throws IOException {
        ServerSocketChannel server = newServer();
        server.bind(loopbackAnyPort());
        return server;
    }

    /** A new, unconnected client channel of the provider under test. */
    protected SocketChannel newClient() throws IOException {
        return track(provider.openSocketChannel());
    }

    /** The port a bound channel listens on. */
    static int portOf(ServerSocketChannel server) throws IOException {
        return ((InetSocketAddress) server.getLocalAddress()).getPort();
    }

    /**
     * A new non-blocking client registered with {@code selector} and connected to {@code server}
     * through it (OP_CONNECT, then {@code finishConnect()}); its key, still interested in OP_CONNECT.
     */
    protected SelectionKey connectThrough(Selector selector, ServerSocketChannel server) throws IOException {
        SocketChannel client = newClient();
        client.configureBlocking(false);
        SelectionKey key = client.register(selector, SelectionKey.OP_CONNECT);
        if (!client.connect(server.getLocalAddress())) {
            while (!client.finishConnect()) {
                selector.select(100);
                selector.selectedKeys().clear();
            }
        }
        return key;
    }

    /** A connected pair of blocking channels: {@code client} and the {@code server} side it was accepted as. */
    protected static final class Pair {
        final SocketChannel client;
        final SocketChannel server;

        Pair(SocketChannel client, SocketChannel server) {
            this.client = client;
            this.server = server;
        }
    }

    /**
     * Connects a new client to a new server and accepts it. {@code accept()} runs in a helper thread while
     * the client connects, as a real server would; accepting after a completed connect in one thread is
     * tested on its own (see {@code BindAndAddressTest}).
     */
    protected Pair connectPair() throws Exception {
        ServerSocketChannel server = openServer();
        return connectPair(server);
    }

    /** As {@link #connectPair()} with an existing bound server channel. */
    protected Pair connectPair(ServerSocketChannel server) throws Exception {
        Background<SocketChannel> acceptor = background("accept", () -> track(server.accept()));
        SocketChannel client = newClient();
        assertTrue("blocking connect() returns true", client.connect(server.getLocalAddress()));
        SocketChannel accepted = acceptor.join();
        assertNotNull("blocking accept() returns a channel", accepted);
        assertSame("an accepted channel belongs to the provider under test", provider, accepted.provider());
        return new Pair(client, accepted);
    }

    /** Starts a helper thread that is stopped (if still running) after the test. */
    protected <T> Background<T> background(String name, Callable<T> body) {
        Background<T> helper = Background.start(target + "-" + name, body);
        synchronized (helpers) {
            helpers.add(helper);
        }
        return helper;
    }

    /**
     * Starts a helper that echoes everything {@code channel} reads back to it, through a buffer of
     * {@code kind} and {@code bufferSize}, until end of stream; it then shuts down output and returns the
     * number of bytes echoed.
     */
    protected Background<Long> startEcho(SocketChannel channel, BufferKind kind, int bufferSize) {
        return background("echo", () -> {
            ByteBuffer buffer = kind.allocate(bufferSize);
            long total = 0;
            while (channel.read(buffer) >= 0) {
                buffer.flip();
                total += buffer.remaining();
                writeFully(channel, buffer);
                buffer.clear();
            }
            channel.shutdownOutput();
            return total;
        });
    }

    // ---------------------------------------------------------------------------------------------------
    // data

    /** {@code length} reproducible pseudo-random bytes. */
    static byte[] randomBytes(long seed, int length) {
        byte[] data = new byte[length];
        new Random(seed).nextBytes(data);
        return data;
    }

    /** CRC32 of {@code data}. */
    static long crc(byte[] data) {
        CRC32 crc = new CRC32();
        crc.update(data, 0, data.length);
        return crc.getValue();
    }

    /** Writes all remaining bytes (a loop, so that it is also correct for a non-conforming partial write). */
    static void writeFully(SocketChannel channel, ByteBuffer source) throws IOException {
        while (source.hasRemaining()) {
            channel.write(source);
        }
    }

    /** Reads until {@code destination} is full; end of stream before that is an {@link EOFException}. */
    static void readFully(SocketChannel channel, ByteBuffer destination) throws IOException {
        while (destination.hasRemaining()) {
            if (channel.read(destination) < 0) {
                throw new EOFException("end of stream with " + destination.remaining() + " bytes missing");
            }
        }
    }

    /** Reads exactly {@code length} bytes into a new array. */
    static byte[] readExactly(SocketChannel channel, int length) throws IOException {
        ByteBuffer buffer = ByteBuffer.allocate(length);
        readFully(channel, buffer);
        return buffer.array();
    }

    /** Reads everything until end of stream. */
    static byte[] readToEnd(SocketChannel channel) throws IOException {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        ByteBuffer buffer = ByteBuffer.allocate(8192);
        while (channel.read(buffer) >= 0) {
            out.write(buffer.array(), 0, buffer.position());
            buffer.clear();
        }
        return out.toByteArray();
    }

    /** Asserts two arrays are equal, naming the first differing index rather than dumping them. */
    static void assertBytesEqual(String what, byte[] expected, byte[] actual) {
        assertEquals(what + ": length", expected.length, actual.length);
        for (int i = 0; i < expected.length; i++) {
            if (expected[i] != actual[i]) {
                fail(what + ": first difference at index " + i + " of " + expected.length + ": expected "
                        + expected[i] + " but was " + actual[i]);
            }
        }
    }

    // ---------------------------------------------------------------------------------------------------
    // exceptions and waiting

    /** Like {@code assertThrows} but the class must match exactly, not merely be a supertype. */
    static <T extends Throwable> T assertThrowsExactly(Class<T> expected, ThrowingRunnable runnable) {
        Throwable thrown = assertThrows("expected " + expected.getName(), Throwable.class, runnable);
        if (thrown.getClass() != expected) {
            throw new AssertionError("expected exactly " + expected.getName() + " but got " + thrown, thrown);
        }
        return expected.cast(thrown);
    }

    /** Polls {@code condition} (yielding, then sleeping 1 ms) until it holds; fails after {@link #WAIT_SECONDS}. */
    static void await(String what, BooleanSupplier condition) throws InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(WAIT_SECONDS);
        for (int spins = 0; !condition.getAsBoolean(); spins++) {
            if (System.nanoTime() - deadline > 0) {
                fail("gave up after " + WAIT_SECONDS + " s waiting for " + what);
            }
            if (spins < 100) {
                Thread.yield();
            } else {
                Thread.sleep(1);
            }
        }
    }

    /**
     * Waits until {@code thread} is blocked inside {@code method} of {@code channel}: a frame of that method
     * of the channel's class (or a superclass) is on its stack, and the thread is parked or in a native
     * method (both the JDK and hadroNIO wait there). Blocking operations have no observable "now blocked"
     * event; this is the closest a test can get.
     */
    static void awaitBlockedIn(Thread thread, Object channel, String method) throws InterruptedException {
        Set<String> classes = new HashSet<>();
        for (Class<?> c = channel.getClass(); c != null; c = c.getSuperclass()) {
            classes.add(c.getName());
        }
        await("thread '" + thread.getName() + "' to block in " + method + "()", () -> {
            StackTraceElement[] stack = thread.getStackTrace();
            if (stack.length == 0) {
                return false;
            }
            boolean inMethod = false;
            for (StackTraceElement frame : stack) {
                if (frame.getMethodName().equals(method) && classes.contains(frame.getClassName())) {
                    inMethod = true;
                    break;
                }
            }
            Thread.State state = thread.getState();
            boolean waiting = stack[0].isNativeMethod() || state == Thread.State.WAITING
                    || state == Thread.State.TIMED_WAITING;
            return inMethod && waiting;
        });
    }

    static void closeQuietly(Closeable closeable) {
        if (closeable == null) {
            return;
        }
        try {
            closeable.close();
        } catch (IOException | RuntimeException e) {
            // cleanup only; tests that care about close() assert on it themselves
        }
    }
}
