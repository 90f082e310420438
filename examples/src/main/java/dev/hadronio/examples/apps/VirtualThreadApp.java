package dev.hadronio.examples.apps;

import java.io.EOFException;
import java.io.IOException;
import java.lang.reflect.Method;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.SocketChannel;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

/**
 * A thread-per-connection echo server on virtual threads (JDK 21 and later), with 1,000 idle
 * connections and 8 active ones, each active one a virtual thread doing 64-byte round trips.
 * The JDK API is reached by reflection (this program is compiled for Java 11).
 */
@SuppressWarnings("try") // close() of these resources may throw InterruptedException: callers let it through
final class VirtualThreadApp implements App {
    static final int IDLE = 1000;
    static final int ACTIVE = 8;
    static final int PAYLOAD = 64;

    private final List<SocketChannel> idle = new ArrayList<>();

    @Override
    public String name() {
        return "virtual-threads";
    }

    @Override
    public String request() {
        return "64 B echo, 1000 idle connections";
    }

    /** Whether this JVM has virtual threads. */
    static boolean available() {
        return Runtime.version().feature() >= 21;
    }

    /** {@code Thread.ofVirtual().start(task)}. */
    static Thread startVirtual(Runnable task) {
        try {
            Object builder = Thread.class.getMethod("ofVirtual").invoke(null);
            Method start = Class.forName("java.lang.Thread$Builder").getMethod("start", Runnable.class);
            return (Thread) start.invoke(builder, task);
        } catch (ReflectiveOperationException e) {
            throw new IllegalStateException("virtual threads need JDK 21 or later", e);
        }
    }

    @Override
    public Server serve(InetSocketAddress address) throws IOException {
        return EchoServer.start(address, 2048, PAYLOAD, VirtualThreadApp::startVirtual);
    }

    @Override
    public Client connect(InetSocketAddress address) throws Exception {
        if (idle.isEmpty()) {
            CountDownLatch opened = new CountDownLatch(IDLE);
            List<Throwable> failures = new ArrayList<>();
            for (int i = 0; i < IDLE; i++) {
                startVirtual(() -> {
                    try {
                        SocketChannel channel = SocketChannel.open(address);
                        synchronized (idle) {
                            idle.add(channel);
                        }
                    } catch (IOException e) {
                        synchronized (failures) {
                            failures.add(e);
                        }
                    }
                    opened.countDown();
                });
            }
            if (!opened.await(60, TimeUnit.SECONDS)) {
                throw new IllegalStateException("the " + IDLE + " idle connections did not open within 60 s");
            }
            synchronized (failures) {
                if (!failures.isEmpty()) {
                    throw new IllegalStateException("opening " + IDLE + " idle connections failed: " + failures);
                }
            }
        }
        return new EchoClient(address, SocketChannel.open(address));
    }

    /** One active connection, used from one virtual thread at a time. */
    final class EchoClient implements Client {
        final InetSocketAddress address;
        final SocketChannel channel;
        final ByteBuffer message = ByteBuffer.allocateDirect(PAYLOAD);
        final ByteBuffer reply = ByteBuffer.allocateDirect(PAYLOAD);
        byte sequence;

        EchoClient(InetSocketAddress address, SocketChannel channel) {
            this.address = address;
            this.channel = channel;
        }

        @Override
        public void call() throws IOException {
            sequence++;
            message.clear();
            while (message.hasRemaining()) {
                message.put(sequence);
            }
            message.flip();
            while (message.hasRemaining()) {
                channel.write(message);
            }
            reply.clear();
            while (reply.hasRemaining()) {
                if (channel.read(reply) < 0) {
                    throw new EOFException("the server closed");
                }
            }
            if (reply.get(0) != sequence || reply.get(PAYLOAD - 1) != sequence) {
                throw new IllegalStateException("unexpected echo");
            }
        }

        @Override
        public Client another() throws IOException {
            return new EchoClient(address, SocketChannel.open(address));
        }

        @Override
        public void close() throws IOException {
            channel.close();
        }
    }

    @Override
    public int inFlight() {
        return ACTIVE;
    }

    @Override
    public boolean virtualThreads() {
        return true;
    }

    @Override
    public int minimumJdk() {
        return 21;
    }

    @Override
    public void release() {
        synchronized (idle) {
            for (SocketChannel channel : idle) {
                try {
                    channel.close();
                } catch (IOException e) {
                    // closing at the end
                }
            }
            idle.clear();
        }
    }
}
