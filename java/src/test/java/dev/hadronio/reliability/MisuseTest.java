package dev.hadronio.reliability;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertFalse;
import static org.junit.Assert.assertNotNull;
import static org.junit.Assert.assertTrue;
import static org.junit.Assert.fail;

import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.StandardSocketOptions;
import java.nio.ByteBuffer;
import java.nio.channels.AsynchronousCloseException;
import java.nio.channels.CancelledKeyException;
import java.nio.channels.ClosedChannelException;
import java.nio.channels.ClosedSelectorException;
import java.nio.channels.SelectionKey;
import java.nio.channels.Selector;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.nio.channels.spi.SelectorProvider;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.Callable;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.TimeUnit;
import java.util.function.Predicate;
import org.junit.Assume;
import org.junit.Before;
import org.junit.Rule;
import org.junit.Test;
import org.junit.rules.TestRule;
import org.junit.runner.RunWith;
import org.junit.runners.Parameterized;
import org.junit.runners.Parameterized.Parameter;
import org.junit.runners.Parameterized.Parameters;

/**
 * Misuse from many threads: closing a channel or selector while other threads are blocked in it or
 * queued for it, closing from many threads at once, using and registering channels after (or while)
 * they are closed, shutting a direction down under a blocked reader or writer. Each scenario runs with
 * the JDK's provider and with ours under the same assertions: the JDK's exception classes, exactly
 * ({@code AsynchronousCloseException} for the thread blocked in the operation, {@code
 * ClosedChannelException} for threads that start one on a closed channel, {@code
 * ClosedSelectorException}, {@code CancelledKeyException}), and never a crash, a hang or another
 * exception. Every wait is bounded; a thread that does not finish fails the test with its stack.
 *
 * <p>The single-threaded cases (every operation on a closed channel, double close, interrupts) are in
 * the conformance suite ({@code MisuseExceptionsTest}, {@code CloseSemanticsTest}); this class adds the
 * concurrent ones.
 */
@RunWith(Parameterized.class)
public class MisuseTest {
    /** Bounds a hang only. */
    static final long WAIT_SECONDS = 20;
    /** How long a waiting thread must stay in its wait before the test acts on it. */
    static final long SETTLE_MILLIS = 20;
    static final int THREADS = 8;
    static final int CLOSERS = 16;
    static final int ROUNDS = 20;
    static final int RACE_ROUNDS = 200;

    @Parameters(name = "{0}")
    public static List<Object[]> parameters() {
        List<Object[]> rows = new ArrayList<>();
        for (Reliability.Provider provider : Reliability.Provider.values()) {
            rows.add(new Object[] {provider});
        }
        return rows;
    }

    @Parameter(0)
    public Reliability.Provider target;

    private SelectorProvider provider;
    private final Resources resources = new Resources();

    @Rule
    public final TestRule rules = resources.withTimeout(120);

    @Before
    public void createProvider() {
        provider = target.get();
    }

    // --- helpers ----------------------------------------------------------------------------------

    /** A helper thread running one call; {@link #outcome()} waits a bounded time for it. */
    static final class Attempt {
        final Thread thread;
        private volatile Object result;
        private volatile Throwable thrown;
        private volatile boolean done;

        Attempt(String name, Callable<?> body) {
            thread = new Thread(() -> {
                try {
                    result = body.call();
                } catch (Throwable t) {
                    thrown = t;
                } finally {
                    done = true;
                }
            }, name);
            thread.setDaemon(true);
            thread.start();
        }

        /** Waits for the call; its exception, or null if it returned. */
        Throwable outcome() throws InterruptedException {
            thread.join(TimeUnit.SECONDS.toMillis(WAIT_SECONDS));
            if (!done) {
                AssertionError error = new AssertionError("thread '" + thread.getName() + "' did not finish within "
                        + WAIT_SECONDS + " s (it hangs); its stack is the cause");
                Throwable stack = new Throwable("stack of '" + thread.getName() + "' (" + thread.getState() + ")");
                stack.setStackTrace(thread.getStackTrace());
                error.initCause(stack);
                throw error;
            }
            return thrown;
        }

        /** Waits for the call, which must have thrown exactly {@code expected}. */
        void assertThrew(Class<? extends Throwable> expected) throws InterruptedException {
            Throwable t = outcome();
            if (t == null) {
                fail("thread '" + thread.getName() + "' returned " + result + "; expected " + expected.getName());
            }
            assertExactly(expected, t, thread.getName());
        }

        Object result() throws InterruptedException {
            Throwable t = outcome();
            if (t != null) {
                throw new AssertionError("thread '" + thread.getName() + "' threw " + t, t);
            }
            return result;
        }
    }

    static void assertExactly(Class<? extends Throwable> expected, Throwable thrown, String where) {
        if (thrown == null || thrown.getClass() != expected) {
            throw new AssertionError(where + ": expected exactly " + expected.getName() + " but got " + thrown, thrown);
        }
    }

    /** Polls {@code condition} every millisecond; fails after {@link #WAIT_SECONDS}. */
    static void await(String what, java.util.function.BooleanSupplier condition) throws InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(WAIT_SECONDS);
        while (!condition.getAsBoolean()) {
            if (System.nanoTime() > deadline) {
                fail("gave up after " + WAIT_SECONDS + " s waiting for " + what);
            }
            Thread.sleep(1);
        }
    }

    private static boolean onStack(StackTraceElement[] stack, Set<String> classes, String method) {
        for (StackTraceElement frame : stack) {
            if (frame.getMethodName().equals(method) && classes.contains(frame.getClassName())) {
                return true;
            }
        }
        return false;
    }

    private static Set<String> classesOf(Object object) {
        Set<String> classes = new HashSet<>();
        for (Class<?> c = object.getClass(); c != null; c = c.getSuperclass()) {
            classes.add(c.getName());
        }
        return classes;
    }

    /**
     * The thread is inside {@code method} of {@code target} and waits there: in a native method (both
     * providers wait in native code) or parked, and not for one of the target's locks.
     */
    static Predicate<Thread> blockedIn(Object target, String method) {
        Set<String> classes = classesOf(target);
        return thread -> {
            StackTraceElement[] stack = thread.getStackTrace();
            if (stack.length == 0 || !onStack(stack, classes, method) || waitsForLock(thread, stack)) {
                return false;
            }
            Thread.State state = thread.getState();
            return stack[0].isNativeMethod() || state == Thread.State.WAITING || state == Thread.State.TIMED_WAITING;
        };
    }

    /** The thread is inside {@code method} of {@code target}, waiting for a lock (ReentrantLock or monitor). */
    static Predicate<Thread> queuedIn(Object target, String method) {
        Set<String> classes = classesOf(target);
        return thread -> {
            StackTraceElement[] stack = thread.getStackTrace();
            return stack.length > 0 && onStack(stack, classes, method) && waitsForLock(thread, stack);
        };
    }

    private static boolean waitsForLock(Thread thread, StackTraceElement[] stack) {
        if (thread.getState() == Thread.State.BLOCKED) {
            return true;
        }
        if (thread.getState() != Thread.State.WAITING) {
            return false;
        }
        for (StackTraceElement frame : stack) {
            if (frame.getClassName().equals("java.util.concurrent.locks.ReentrantLock")) {
                return true;
            }
        }
        return false;
    }

    /**
     * Waits until {@code condition} holds for the attempt's thread at two looks {@value #SETTLE_MILLIS} ms
     * apart, so that the thread has gone past any short spin into its real wait (a thread that merely
     * passes through the state could take a shortcut that a waiting one does not).
     */
    static void awaitThread(Attempt attempt, Predicate<Thread> condition, String what) throws InterruptedException {
        await("thread '" + attempt.thread.getName() + "' to " + what, () -> {
            if (attempt.done) {
                Throwable t = attempt.thrown;
                throw new AssertionError("thread '" + attempt.thread.getName() + "' finished instead of waiting to "
                        + what + ": " + (t == null ? "returned " + attempt.result : t), t);
            }
            if (!condition.test(attempt.thread)) {
                return false;
            }
            try {
                Thread.sleep(SETTLE_MILLIS);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                return false;
            }
            return !attempt.done && condition.test(attempt.thread);
        });
    }

    /** A connected pair of blocking channels of the provider under test. */
    static final class Pair {
        final SocketChannel client;
        final SocketChannel server;

        Pair(SocketChannel client, SocketChannel server) {
            this.client = client;
            this.server = server;
        }
    }

    private ServerSocketChannel listener() throws IOException {
        ServerSocketChannel server = resources.add(provider.openServerSocketChannel());
        server.bind(new InetSocketAddress("127.0.0.1", 0));
        return server;
    }

    private Pair pair() throws Exception {
        ServerSocketChannel server = listener();
        Attempt accept = new Attempt("accept", server::accept);
        SocketChannel client = resources.add(provider.openSocketChannel());
        client.connect(server.getLocalAddress());
        SocketChannel accepted = resources.add((SocketChannel) accept.result());
        server.close();
        return new Pair(client, accepted);
    }

    /** Starts {@code count} threads that wait at one barrier and then all run {@code body}. */
    private static List<Attempt> together(String name, int count, Callable<?> body) {
        CyclicBarrier barrier = new CyclicBarrier(count);
        List<Attempt> attempts = new ArrayList<>();
        for (int i = 0; i < count; i++) {
            attempts.add(new Attempt(name + "-" + i, () -> {
                barrier.await(WAIT_SECONDS, TimeUnit.SECONDS);
                return body.call();
            }));
        }
        return attempts;
    }

    /** What each of {@code attempts} threw, by class name, with "returned" for a normal return. */
    private static Map<String, Integer> outcomes(List<Attempt> attempts) throws InterruptedException {
        Map<String, Integer> counts = new TreeMap<>();
        for (Attempt attempt : attempts) {
            Throwable t = attempt.outcome();
            counts.merge(t == null ? "returned" : t.getClass().getSimpleName(), 1, Integer::sum);
        }
        return counts;
    }

    /** Writes 1 MiB blocks until the channel stops taking them (the peer does not read). */
    private static Attempt writeUntilClosed(String name, SocketChannel channel) {
        return new Attempt(name, () -> {
            ByteBuffer block = ByteBuffer.allocateDirect(1 << 20);
            while (true) {
                block.clear();
                channel.write(block);
            }
        });
    }

    // --- close while others are blocked or queued ----------------------------------------------

    /**
     * One thread blocked in read, {@value #THREADS}-1 queued behind it for the channel's read lock;
     * another thread closes the channel. The blocked one gets AsynchronousCloseException, the queued
     * ones ClosedChannelException (they start their read on a closed channel); the peer reads end of
     * stream.
     */
    @Test
    public void closeWithReadersBlockedAndQueued() throws Exception {
        Pair pair = pair();
        List<Attempt> readers = new ArrayList<>();
        readers.add(new Attempt("reader-0", () -> pair.client.read(ByteBuffer.allocate(64))));
        awaitThread(readers.get(0), blockedIn(pair.client, "read"), "block in read()");
        for (int i = 1; i < THREADS; i++) {
            Attempt reader = new Attempt("reader-" + i, () -> pair.client.read(ByteBuffer.allocateDirect(64)));
            awaitThread(reader, queuedIn(pair.client, "read"), "queue for read()");
            readers.add(reader);
        }
        new Attempt("closer", () -> {
            pair.client.close();
            return null;
        }).result();
        readers.get(0).assertThrew(AsynchronousCloseException.class);
        for (Attempt reader : readers.subList(1, readers.size())) {
            reader.assertThrew(ClosedChannelException.class);
        }
        assertEquals("the peer reads end of stream", -1, pair.server.read(ByteBuffer.allocate(1)));
    }

    /**
     * One thread blocked in a write the peer does not read, others queued behind it; another thread
     * closes the channel. Every writer's loop ends with AsynchronousCloseException or
     * ClosedChannelException (exactly one of the two: the blocked write may first return the part it
     * wrote), at most one of them asynchronous; the peer still reads to an end.
     */
    @Test
    public void closeWithWritersBlockedAndQueued() throws Exception {
        Pair pair = pair();
        List<Attempt> writers = new ArrayList<>();
        writers.add(writeUntilClosed("writer-0", pair.client));
        awaitThread(writers.get(0), blockedIn(pair.client, "write"), "block in write()");
        for (int i = 1; i < THREADS; i++) {
            Attempt writer = writeUntilClosed("writer-" + i, pair.client);
            awaitThread(writer, queuedIn(pair.client, "write"), "queue for write()");
            writers.add(writer);
        }
        new Attempt("closer", () -> {
            pair.client.close();
            return null;
        }).result();
        Map<String, Integer> outcomes = outcomes(writers);
        for (Attempt writer : writers) {
            Throwable t = writer.outcome();
            assertTrue(writer.thread.getName() + " ended with " + t + "; all: " + outcomes,
                    t != null && (t.getClass() == AsynchronousCloseException.class
                            || t.getClass() == ClosedChannelException.class));
        }
        assertTrue("at most one asynchronous close: " + outcomes,
                outcomes.getOrDefault("AsynchronousCloseException", 0) <= 1);
        Attempt drain = new Attempt("peer-drain", () -> {
            ByteBuffer buffer = ByteBuffer.allocateDirect(1 << 20);
            long total = 0;
            try {
                while (true) {
                    buffer.clear();
                    int n = pair.server.read(buffer);
                    if (n < 0) {
                        return total;
                    }
                    total += n;
                }
            } catch (IOException e) {
                // a reset is an end too: the writer's close may abort a connection with unsent data
                return total;
            }
        });
        assertNotNull("the peer's read loop ends", drain.result());
    }

    /**
     * Two threads select in a loop on one selector (one blocked in select, the other queued for the
     * selector); another thread closes the selector. Both loops end with ClosedSelectorException, the
     * registered channel is deregistered and still works in blocking mode.
     */
    @Test
    public void closeSelectorWithSelectorsBlockedAndQueued() throws Exception {
        Pair pair = pair();
        Selector selector = resources.add(provider.openSelector());
        pair.client.configureBlocking(false);
        SelectionKey key = pair.client.register(selector, SelectionKey.OP_READ);
        Callable<Object> loop = () -> {
            while (true) {
                selector.select();
                selector.selectedKeys().clear();
            }
        };
        Attempt first = new Attempt("selector-0", loop);
        awaitThread(first, blockedIn(selector, "select"), "block in select()");
        Attempt second = new Attempt("selector-1", loop);
        awaitThread(second, queuedIn(selector, "select"), "queue for select()");
        new Attempt("closer", () -> {
            selector.close();
            return null;
        }).result();
        first.assertThrew(ClosedSelectorException.class);
        second.assertThrew(ClosedSelectorException.class);
        assertFalse("key cancelled", key.isValid());
        assertFalse("channel deregistered", pair.client.isRegistered());
        assertTrue("channel still open", pair.client.isOpen());
        pair.client.configureBlocking(true);
        assertCarriesByte(pair.server, pair.client, (byte) 42);
    }

    /**
     * {@value #ROUNDS} rounds: {@value #CLOSERS} threads close at the same moment a connected channel a
     * thread is blocked reading, a listener a thread is blocked accepting on, and a selector a thread
     * is blocked selecting on. Every close returns normally; the reader and the acceptor get
     * AsynchronousCloseException, the selecting loop ClosedSelectorException; a second close of each
     * is harmless.
     */
    @Test
    public void closeFromManyThreadsAtOnce() throws Exception {
        for (int round = 0; round < ROUNDS; round++) {
            Pair pair = pair();
            ServerSocketChannel server = listener();
            Selector selector = resources.add(provider.openSelector());
            Attempt reader = new Attempt("reader", () -> pair.client.read(ByteBuffer.allocate(64)));
            Attempt acceptor = new Attempt("acceptor", server::accept);
            Attempt selecting = new Attempt("selecting", () -> {
                while (true) {
                    selector.select();
                }
            });
            awaitThread(reader, blockedIn(pair.client, "read"), "block in read()");
            awaitThread(acceptor, blockedIn(server, "accept"), "block in accept()");
            awaitThread(selecting, blockedIn(selector, "select"), "block in select()");
            List<Attempt> closers = together("closer", CLOSERS, () -> {
                pair.client.close();
                server.close();
                selector.close();
                return null;
            });
            Map<String, Integer> outcomes = outcomes(closers);
            assertEquals("round " + round + ": what the closers saw", Map.of("returned", CLOSERS), outcomes);
            reader.assertThrew(AsynchronousCloseException.class);
            acceptor.assertThrew(AsynchronousCloseException.class);
            selecting.assertThrew(ClosedSelectorException.class);
            assertFalse(pair.client.isOpen());
            assertFalse(server.isOpen());
            assertFalse(selector.isOpen());
            pair.client.close();
            server.close();
            selector.close();
            assertEquals("round " + round + ": the peer reads end of stream", -1, pair.server.read(ByteBuffer.allocate(1)));
            resources.closeAll();
        }
    }

    /**
     * Blocking connect to a listener whose backlog is full (it never accepts, so the kernel drops
     * the SYN and the connect waits); another thread closes the channel: AsynchronousCloseException.
     * The listener is always the JDK's: only the connecting side is under test.
     */
    @Test
    public void closeWhileBlockedInConnect() throws Exception {
        ServerSocketChannel full = resources.add(SelectorProvider.provider().openServerSocketChannel());
        full.bind(new InetSocketAddress("127.0.0.1", 0), 1);
        boolean filled = false;
        for (int i = 0; i < 32 && !filled; i++) {
            SocketChannel filler = resources.add(SelectorProvider.provider().openSocketChannel());
            filler.configureBlocking(false);
            if (filler.connect(full.getLocalAddress())) {
                continue;
            }
            try (Selector wait = SelectorProvider.provider().openSelector()) {
                filler.register(wait, SelectionKey.OP_CONNECT);
                filled = wait.select(300) == 0;
            }
        }
        Assume.assumeTrue("the kernel never stopped completing connections to a listener that does not accept",
                filled);
        SocketChannel client = resources.add(provider.openSocketChannel());
        Attempt connect = new Attempt("connect", () -> client.connect(full.getLocalAddress()));
        awaitThread(connect, blockedIn(client, "connect"), "block in connect()");
        new Attempt("closer", () -> {
            client.close();
            return null;
        }).result();
        connect.assertThrew(AsynchronousCloseException.class);
        assertFalse(client.isOpen());
        assertFalse(client.isConnectionPending());
    }

    // --- registration and use racing close -------------------------------------------------------

    /**
     * {@value #RACE_ROUNDS} rounds each: one thread registers a channel while another closes that
     * channel, or closes the selector, 0 to 98 microseconds later (a different delay each round, to
     * sweep the window). The register either throws exactly ClosedChannelException
     * (channel closed) or ClosedSelectorException (selector closed), or returns a key that is invalid
     * once the close has returned (and the channel is no longer registered, so that it can go back to
     * blocking mode).
     *
     * <p>Two races of the JDK's own code are tolerated (and counted) because the oracle has them on JDK
     * 17: a Selector.close() racing a first registration may throw NullPointerException from
     * {@code AbstractSelectableChannel.removeKey} (JDK-8336339, fixed in JDK 24), and the JDK's
     * register may throw CancelledKeyException when a close cancels the new key part-way
     * (JDK-8287580).
     */
    @Test
    public void registerRacingClose() throws Exception {
        Map<String, Integer> seen = new TreeMap<>();
        for (int round = 0; round < 2 * RACE_ROUNDS; round++) {
            boolean closeChannel = round % 2 == 0;
            String what = "round " + round + ", " + (closeChannel ? "channel" : "selector") + " closed";
            Selector selector = provider.openSelector();
            SocketChannel channel = provider.openSocketChannel();
            try {
                channel.configureBlocking(false);
                CyclicBarrier barrier = new CyclicBarrier(2);
                Attempt register = new Attempt("register", () -> {
                    barrier.await(WAIT_SECONDS, TimeUnit.SECONDS);
                    return channel.register(selector, SelectionKey.OP_READ);
                });
                long delayNanos = (round / 2 % 50) * 2_000L;
                Attempt close = new Attempt("close", () -> {
                    barrier.await(WAIT_SECONDS, TimeUnit.SECONDS);
                    long until = System.nanoTime() + delayNanos;
                    while (System.nanoTime() < until) {
                        Thread.onSpinWait();
                    }
                    if (closeChannel) {
                        channel.close();
                    } else {
                        selector.close();
                    }
                    return null;
                });
                Throwable closeThrew = close.outcome();
                String outcome;
                if (closeThrew != null) {
                    if (closeChannel || !isJdk8336339(closeThrew)) {
                        throw new AssertionError(what + ": close() threw " + closeThrew, closeThrew);
                    }
                    outcome = "close threw NPE (JDK-8336339)";
                } else {
                    Throwable thrown = register.outcome();
                    if (thrown == null) {
                        SelectionKey key = (SelectionKey) register.result();
                        if (closeChannel) {
                            selector.selectNow();
                        }
                        assertFalse(what + ": the key register() returned is still valid", key.isValid());
                        assertFalse(what + ": the channel is still registered", channel.isRegistered());
                        outcome = "key";
                    } else if (thrown.getClass() == CancelledKeyException.class) {
                        outcome = "CancelledKeyException (JDK-8287580)";
                    } else {
                        assertExactly(closeChannel ? ClosedChannelException.class : ClosedSelectorException.class,
                                thrown, what + ": register()");
                        outcome = thrown.getClass().getSimpleName();
                    }
                }
                seen.merge((closeChannel ? "channel closed: " : "selector closed: ") + outcome, 1, Integer::sum);
            } finally {
                channel.close();
                try {
                    selector.close();
                } catch (NullPointerException e) {
                    // JDK-8336339 again (see above): the selector is closed regardless
                }
            }
        }
        System.out.println("MisuseTest[" + target + "] register racing close: " + seen);
    }

    /** The NullPointerException of JDK-8336339: thrown by AbstractSelectableChannel.removeKey. */
    private static boolean isJdk8336339(Throwable t) {
        if (!(t instanceof NullPointerException)) {
            return false;
        }
        for (StackTraceElement frame : t.getStackTrace()) {
            if (frame.getClassName().equals("java.nio.channels.spi.AbstractSelectableChannel")
                    && frame.getMethodName().equals("removeKey")) {
                return true;
            }
        }
        return false;
    }

    /**
     * A closed channel and a closed selector used by {@value #CLOSERS} threads at once: every
     * operation throws exactly the JDK's exception.
     */
    @Test
    public void useAfterCloseFromManyThreads() throws Exception {
        Pair pair = pair();
        Selector selector = resources.add(provider.openSelector());
        pair.client.configureBlocking(false);
        SelectionKey key = pair.client.register(selector, SelectionKey.OP_READ);
        Selector other = resources.add(provider.openSelector());
        pair.client.close();
        selector.close();
        List<Attempt> users = together("user", CLOSERS, () -> {
            expect(ClosedChannelException.class, () -> pair.client.read(ByteBuffer.allocate(1)));
            expect(ClosedChannelException.class, () -> pair.client.write(ByteBuffer.allocate(1)));
            expect(ClosedChannelException.class,
                    () -> pair.client.write(new ByteBuffer[] {ByteBuffer.allocateDirect(1)}));
            expect(ClosedChannelException.class, () -> pair.client.register(other, SelectionKey.OP_READ));
            expect(ClosedChannelException.class, () -> pair.client.configureBlocking(true));
            expect(ClosedChannelException.class, pair.client::getRemoteAddress);
            expect(ClosedChannelException.class, pair.client::shutdownOutput);
            expect(ClosedChannelException.class,
                    () -> pair.client.setOption(StandardSocketOptions.TCP_NODELAY, true));
            expect(ClosedSelectorException.class, selector::selectNow);
            expect(ClosedSelectorException.class, () -> selector.select(1));
            expect(ClosedSelectorException.class, selector::keys);
            expect(CancelledKeyException.class, () -> key.interestOps(SelectionKey.OP_WRITE));
            expect(CancelledKeyException.class, key::readyOps);
            selector.wakeup();
            pair.client.close();
            selector.close();
            return null;
        });
        assertEquals("what the threads saw", Map.of("returned", CLOSERS), outcomes(users));
    }

    interface Action {
        Object run() throws Exception;
    }

    private static void expect(Class<? extends Throwable> expected, Action action) {
        try {
            Object result = action.run();
            fail("expected exactly " + expected.getName() + " but the call returned " + result);
        } catch (Exception e) {
            assertExactly(expected, e, "after close");
        }
    }

    /**
     * A key's channel is closed by one thread while another changes the key's interest set in a loop
     * and a third selects: the interest changes end with exactly CancelledKeyException, the selecting
     * loop keeps going and the key leaves the selector.
     */
    @Test
    public void interestOpsRacingClose() throws Exception {
        for (int round = 0; round < ROUNDS; round++) {
            Pair pair = pair();
            Selector selector = resources.add(provider.openSelector());
            pair.client.configureBlocking(false);
            SelectionKey key = pair.client.register(selector, SelectionKey.OP_READ);
            Attempt selecting = new Attempt("selecting", () -> {
                while (selector.keys().contains(key) || key.isValid()) {
                    selector.select(5);
                    selector.selectedKeys().clear();
                }
                return selector.keys().size();
            });
            Attempt flipping = new Attempt("interest", () -> {
                for (long i = 0; ; i++) {
                    key.interestOps((i & 1) == 0 ? SelectionKey.OP_WRITE : SelectionKey.OP_READ);
                    key.selector().wakeup();
                }
            });
            Thread.sleep(5);
            pair.client.close();
            flipping.assertThrew(CancelledKeyException.class);
            assertEquals("round " + round + ": keys left", 0, selecting.result());
            assertTrue("selector still open", selector.isOpen());
            resources.closeAll();
        }
    }

    // --- shutdown, blocking mode and interrupt from other threads --------------------------------

    /**
     * shutdownInput() from another thread while a thread is blocked in read(): the read returns -1
     * (as with the JDK), the channel stays open and still writes.
     */
    @Test
    public void shutdownInputUnderBlockedReader() throws Exception {
        Pair pair = pair();
        Attempt reader = new Attempt("reader", () -> pair.client.read(ByteBuffer.allocate(64)));
        awaitThread(reader, blockedIn(pair.client, "read"), "block in read()");
        new Attempt("shutdown", () -> pair.client.shutdownInput()).result();
        assertEquals("the blocked read returns end of stream", -1, reader.result());
        assertEquals("later reads too", -1, pair.client.read(ByteBuffer.allocate(1)));
        assertTrue(pair.client.isOpen());
        assertCarriesByte(pair.client, pair.server, (byte) 7);
    }

    /**
     * shutdownOutput() from another thread while a thread is blocked in a write the peer does not
     * read: the blocked call returns what it wrote, or throws AsynchronousCloseException if nothing
     * (the JDK's behaviour), and the writer's next call throws AsynchronousCloseException; the channel
     * stays open; the peer reads exactly the bytes the writer was told were written, then end of
     * stream; the channel still reads what the peer sends.
     */
    @Test
    public void shutdownOutputUnderBlockedWriter() throws Exception {
        assertShutdownOutputUnderWrites(1 << 20);
    }

    /**
     * The same with the writer's first call blocked (a 64 MiB write): no call returned before the
     * shutdown, and no thread of this JVM uses the channel after it.
     */
    @Test
    public void shutdownOutputUnderFirstBlockedWrite() throws Exception {
        assertShutdownOutputUnderWrites(64 << 20);
    }

    private void assertShutdownOutputUnderWrites(int blockSize) throws Exception {
        Pair pair = pair();
        Attempt writer = new Attempt("writer", () -> {
            ByteBuffer block = ByteBuffer.allocateDirect(blockSize);
            long written = 0;
            try {
                while (true) {
                    block.clear();
                    written += pair.client.write(block);
                }
            } catch (AsynchronousCloseException e) {
                return written;
            }
        });
        awaitThread(writer, blockedIn(pair.client, "write"), "block in write()");
        new Attempt("shutdown", () -> pair.client.shutdownOutput()).result();
        long written = (Long) writer.result();
        assertTrue(pair.client.isOpen());
        ByteBuffer buffer = ByteBuffer.allocateDirect(1 << 20);
        long total = 0;
        while (true) {
            buffer.clear();
            int n = pair.server.read(buffer);
            if (n < 0) {
                break;
            }
            total += n;
        }
        if (blockSize <= 1 << 20) {
            assertTrue("writes returned before one blocked", written > 0);
        }
        assertEquals("bytes the peer read vs bytes the writer was told were written", written, total);
        assertCarriesByte(pair.server, pair.client, (byte) 9);
    }

    /**
     * configureBlocking(false) from another thread while a thread is blocked in read(): it waits for
     * that read (the JDK takes the read lock), which returns the byte the peer then sends; afterwards
     * the channel is non-blocking.
     */
    @Test
    public void configureBlockingWaitsForBlockedRead() throws Exception {
        Pair pair = pair();
        Attempt reader = new Attempt("reader", () -> pair.client.read(ByteBuffer.allocate(64)));
        awaitThread(reader, blockedIn(pair.client, "read"), "block in read()");
        Attempt configure = new Attempt("configure", () -> pair.client.configureBlocking(false));
        awaitThread(configure, queuedIn(pair.client, "configureBlocking"), "wait in configureBlocking()");
        assertTrue("still blocking while a blocking read is in progress", pair.client.isBlocking());
        pair.server.write(ByteBuffer.wrap(new byte[] {5}));
        assertEquals("the blocked read gets the byte", 1, reader.result());
        assertEquals(pair.client, configure.result());
        assertFalse(pair.client.isBlocking());
        assertEquals("a non-blocking read with nothing to read", 0, pair.client.read(ByteBuffer.allocate(1)));
    }

    /**
     * Thread.interrupt() of a thread blocked in select(): the select returns, the interrupt status stays
     * set, the selector and its keys stay usable.
     */
    @Test
    public void interruptBlockedSelect() throws Exception {
        Pair pair = pair();
        Selector selector = resources.add(provider.openSelector());
        pair.client.configureBlocking(false);
        SelectionKey key = pair.client.register(selector, SelectionKey.OP_READ);
        Attempt selecting = new Attempt("selecting", () -> {
            int n = selector.select();
            return n + " interrupted=" + Thread.currentThread().isInterrupted();
        });
        awaitThread(selecting, blockedIn(selector, "select"), "block in select()");
        selecting.thread.interrupt();
        assertEquals("select() returns 0 with the interrupt status set", "0 interrupted=true", selecting.result());
        assertTrue(selector.isOpen());
        assertTrue(key.isValid());
        pair.server.write(ByteBuffer.wrap(new byte[] {1}));
        assertEquals("the selector still works", 1, selector.select(WAIT_SECONDS * 1000));
        assertTrue(key.isReadable());
    }

    /** {@code from} writes one byte and {@code to} reads exactly it: the connection still works. */
    private static void assertCarriesByte(SocketChannel from, SocketChannel to, byte value) throws IOException {
        from.write(ByteBuffer.wrap(new byte[] {value}));
        ByteBuffer one = ByteBuffer.allocate(1);
        assertEquals(1, to.read(one));
        assertEquals(value, one.get(0));
    }
}
