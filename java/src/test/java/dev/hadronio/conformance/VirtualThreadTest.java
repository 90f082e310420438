package dev.hadronio.conformance;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertTrue;
import static org.junit.Assert.fail;

import java.io.IOException;
import java.io.InputStream;
import java.lang.reflect.Method;
import java.net.SocketTimeoutException;
import java.nio.ByteBuffer;
import java.nio.channels.AsynchronousCloseException;
import java.nio.channels.ClosedByInterruptException;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.Assume;
import org.junit.Before;
import org.junit.Test;
import org.junit.runner.RunWith;
import org.junit.runners.Parameterized;
import org.junit.runners.Parameterized.Parameters;

/**
 * Blocking channels on virtual threads (JDK 21 and later; skipped on older JDKs, where the API
 * does not exist; reached by reflection, as the suite is compiled for Java 11). A virtual thread
 * blocked in a channel operation must be parked, not running in native code on its carrier: its
 * state is {@code WAITING}, other virtual threads still run with every carrier's virtual threads
 * blocked, and a thread-per-connection echo server with 1,000 idle and 8 active connections serves
 * all of them at the scheduler's default parallelism. Interrupting or closing ends a parked
 * operation as it ends a blocked one; a read timeout (socket adaptor) still applies.
 */
@RunWith(Parameterized.class)
public class VirtualThreadTest extends AbstractConformanceTest {
    static final int IDLE = 1000;
    static final int ACTIVE = 8;
    static final int ROUND_TRIPS = 2000;

    @Parameters(name = "{0}")
    public static List<Object[]> parameters() {
        return Providers.parameters();
    }

    @Before
    public void needVirtualThreads() {
        Assume.assumeTrue("virtual threads need JDK 21 or later", Runtime.version().feature() >= 21);
    }

    /** {@code Executors.newVirtualThreadPerTaskExecutor()}, closed after the test. */
    private ExecutorService virtualThreads() throws Exception {
        Method factory = java.util.concurrent.Executors.class.getMethod("newVirtualThreadPerTaskExecutor");
        ExecutorService executor = (ExecutorService) factory.invoke(null);
        track(() -> executor.shutdownNow());
        return executor;
    }

    /** {@code Thread.ofVirtual().start(task)}. */
    private static Thread startVirtual(Runnable task) throws Exception {
        Object builder = Thread.class.getMethod("ofVirtual").invoke(null);
        return (Thread) Class.forName("java.lang.Thread$Builder").getMethod("start", Runnable.class).invoke(builder, task);
    }

    /** Waits until {@code thread} parks ({@code WAITING} or {@code TIMED_WAITING}). */
    private static void awaitParked(Thread thread, String what) throws InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(WAIT_SECONDS);
        while (System.nanoTime() < deadline) {
            Thread.State state = thread.getState();
            if (state == Thread.State.WAITING || state == Thread.State.TIMED_WAITING) {
                return;
            }
            Thread.sleep(5);
        }
        fail("a virtual thread blocked in " + what + " is " + thread.getState() + ", not parked");
    }

    @Test
    public void blockedOperationsParkTheVirtualThread() throws Exception {
        ServerSocketChannel server = openServer();
        AtomicReference<SocketChannel> accepted = new AtomicReference<>();
        Thread acceptor = startVirtual(() -> {
            try {
                accepted.set(track(server.accept()));
            } catch (IOException e) {
                throw new AssertionError(e);
            }
        });
        awaitParked(acceptor, "accept()");
        SocketChannel client = newClient();
        assertTrue(client.connect(server.getLocalAddress()));
        acceptor.join(TimeUnit.SECONDS.toMillis(WAIT_SECONDS));
        SocketChannel channel = accepted.get();
        assertTrue("accept() on a virtual thread returned a channel", channel != null);

        AtomicReference<Object> result = new AtomicReference<>();
        Thread reader = startVirtual(() -> {
            try {
                ByteBuffer buffer = ByteBuffer.allocate(16);
                result.set(channel.read(buffer));
            } catch (IOException e) {
                result.set(e);
            }
        });
        awaitParked(reader, "read()");
        writeFully(client, ByteBuffer.wrap(new byte[] {1, 2, 3}));
        reader.join(TimeUnit.SECONDS.toMillis(WAIT_SECONDS));
        assertEquals("the parked read returns what came", 3, result.get());

        // A writer whose peer does not read fills the buffers and parks.
        CountDownLatch filling = new CountDownLatch(1);
        Thread writer = startVirtual(() -> {
            try {
                ByteBuffer chunk = ByteBuffer.allocateDirect(1 << 20);
                filling.countDown();
                while (true) {
                    chunk.clear();
                    channel.write(chunk);
                }
            } catch (IOException e) {
                result.set(e);
            }
        });
        filling.await();
        awaitParked(writer, "write()");
        client.close();
        writer.join(TimeUnit.SECONDS.toMillis(WAIT_SECONDS));
        assertTrue("the parked write fails once the peer closed: " + result.get(), result.get() instanceof IOException);
    }

    @Test
    public void blockedVirtualThreadsLeaveTheCarriersFree() throws Exception {
        ServerSocketChannel server = openServer();
        ExecutorService executor = virtualThreads();
        List<Thread> readers = new ArrayList<>();
        for (int i = 0; i < 64; i++) {
            Pair pair = connectPair(server);
            readers.add(startVirtual(() -> {
                try {
                    pair.server.read(ByteBuffer.allocate(1));
                } catch (IOException e) {
                    // closed at the end of the test
                }
            }));
        }
        for (Thread reader : readers) {
            awaitParked(reader, "read()");
        }
        // With every carrier's virtual threads blocked, others must still run.
        List<Future<Long>> work = new ArrayList<>();
        for (int i = 0; i < 100; i++) {
            int seed = i;
            work.add(executor.submit(() -> {
                long x = seed;
                for (int k = 0; k < 10_000; k++) {
                    x = x * 6364136223846793005L + 1442695040888963407L;
                }
                return x;
            }));
        }
        for (Future<Long> future : work) {
            future.get(WAIT_SECONDS, TimeUnit.SECONDS);
        }
    }

    @Test
    public void threadPerConnectionEchoServesIdleAndActiveConnections() throws Exception {
        ServerSocketChannel server = openServer();
        ExecutorService executor = virtualThreads();
        executor.submit(() -> {
            while (true) {
                SocketChannel channel = track(server.accept());
                executor.submit(() -> {
                    ByteBuffer buffer = ByteBuffer.allocateDirect(4096);
                    while (channel.read(buffer) >= 0) {
                        buffer.flip();
                        while (buffer.hasRemaining()) {
                            channel.write(buffer);
                        }
                        buffer.clear();
                    }
                    channel.close();
                    return null;
                });
            }
        });
        List<Future<SocketChannel>> idle = new ArrayList<>();
        for (int i = 0; i < IDLE; i++) {
            idle.add(executor.submit(() -> {
                SocketChannel channel = newClient();
                channel.connect(server.getLocalAddress());
                return channel;
            }));
        }
        for (Future<SocketChannel> future : idle) {
            future.get(WAIT_SECONDS, TimeUnit.SECONDS);
        }
        long start = System.nanoTime();
        List<Future<Long>> active = new ArrayList<>();
        for (int i = 0; i < ACTIVE; i++) {
            int id = i;
            active.add(executor.submit(() -> {
                SocketChannel channel = newClient();
                channel.connect(server.getLocalAddress());
                byte[] message = new byte[64];
                ByteBuffer reply = ByteBuffer.allocate(64);
                for (int round = 0; round < ROUND_TRIPS; round++) {
                    message[0] = (byte) id;
                    message[1] = (byte) round;
                    writeFully(channel, ByteBuffer.wrap(message));
                    reply.clear();
                    readFully(channel, reply);
                    if (reply.get(0) != (byte) id || reply.get(1) != (byte) round) {
                        throw new AssertionError("connection " + id + ", round " + round + ": a wrong echo");
                    }
                }
                return (long) ROUND_TRIPS;
            }));
        }
        long total = 0;
        for (Future<Long> future : active) {
            total += future.get(WAIT_SECONDS * 2, TimeUnit.SECONDS);
        }
        double seconds = (System.nanoTime() - start) / 1e9;
        assertEquals(ACTIVE * (long) ROUND_TRIPS, total);
        System.out.println(String.format(Locale.ROOT, "VirtualThreadTest[%s]: %d idle, %d active connections, "
                + "%.0f round trips/s", target, IDLE, ACTIVE, total / seconds));
    }

    @Test
    public void interruptAndCloseEndAParkedRead() throws Exception {
        Pair pair = connectPair();
        AtomicReference<Throwable> failure = new AtomicReference<>();
        Thread reader = startVirtual(() -> {
            try {
                pair.server.read(ByteBuffer.allocate(1));
            } catch (Throwable e) {
                failure.set(e);
            }
        });
        awaitParked(reader, "read()");
        reader.interrupt();
        reader.join(TimeUnit.SECONDS.toMillis(WAIT_SECONDS));
        assertTrue("an interrupted read throws ClosedByInterruptException: " + failure.get(),
                failure.get() instanceof ClosedByInterruptException);
        assertTrue("and closes the channel", !pair.server.isOpen());

        Pair other = connectPair();
        failure.set(null);
        Thread second = startVirtual(() -> {
            try {
                other.client.read(ByteBuffer.allocate(1));
            } catch (Throwable e) {
                failure.set(e);
            }
        });
        awaitParked(second, "read()");
        other.client.close();
        second.join(TimeUnit.SECONDS.toMillis(WAIT_SECONDS));
        assertTrue("a read whose channel another thread closed throws AsynchronousCloseException: " + failure.get(),
                failure.get() instanceof AsynchronousCloseException);
    }

    @Test
    public void readTimeoutAppliesOnVirtualThreads() throws Exception {
        Pair pair = connectPair();
        pair.server.socket().setSoTimeout(200);
        AtomicReference<Throwable> failure = new AtomicReference<>();
        Thread reader = startVirtual(() -> {
            try (InputStream in = pair.server.socket().getInputStream()) {
                in.read();
            } catch (Throwable e) {
                failure.set(e);
            }
        });
        reader.join(TimeUnit.SECONDS.toMillis(WAIT_SECONDS));
        assertTrue("a read past SO_TIMEOUT throws SocketTimeoutException: " + failure.get(),
                failure.get() instanceof SocketTimeoutException);
    }
}
