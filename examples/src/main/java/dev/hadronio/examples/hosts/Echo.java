package dev.hadronio.examples.hosts;

import java.io.EOFException;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.SelectionKey;
import java.nio.channels.Selector;
import java.nio.channels.SocketChannel;
import java.util.Random;
import java.util.concurrent.atomic.AtomicReference;
import java.util.zip.CRC32;

/** Echo exchanges the checks make: payloads with their CRC-32, a writer and a reader on one connection. */
final class Echo {
    /** How long a connection may take to decide its path (upgrade, or stay on TCP). */
    static final long DECIDE_MILLIS = 15_000;

    private Echo() {
    }

    /** A payload of {@code size} pseudo-random bytes (from {@code seed}) in a direct buffer. */
    static ByteBuffer payload(int size, long seed) {
        byte[] bytes = new byte[size];
        new Random(seed).nextBytes(bytes);
        ByteBuffer buffer = ByteBuffer.allocateDirect(size);
        buffer.put(bytes).flip();
        return buffer;
    }

    static long crc(ByteBuffer buffer) {
        CRC32 crc = new CRC32();
        crc.update(buffer.duplicate());
        return crc.getValue();
    }

    /**
     * Exchanges 64-byte round trips over a blocking channel with an echo server until the
     * connection has decided its path (the upgrade starts at a client's second write); returns it.
     */
    static String decide(SocketChannel channel) throws IOException {
        ByteBuffer out = ByteBuffer.allocateDirect(64);
        ByteBuffer in = ByteBuffer.allocateDirect(64);
        long deadline = System.nanoTime() + DECIDE_MILLIS * 1_000_000;
        String path;
        do {
            out.clear();
            while (out.hasRemaining()) {
                channel.write(out);
            }
            in.clear();
            while (in.hasRemaining()) {
                if (channel.read(in) < 0) {
                    throw new EOFException("the echo server closed the connection");
                }
            }
            path = Hadronio.path(channel);
        } while (!Hadronio.decided(path) && System.nanoTime() < deadline);
        return path;
    }

    /** Fails unless {@code path} is UCX over an RDMA transport. */
    static void requireRdma(String what, String path) {
        if (!Hadronio.overRdma(path)) {
            throw new IllegalStateException(what + " is not on UCX over RDMA: " + path);
        }
    }

    /**
     * Sends {@code payload} from a writer thread, shuts the output down, and reads the echo on this
     * thread until end of stream; fails unless the echo is the payload, byte count and CRC-32, and a
     * further read finds end of stream again.
     */
    static void blocking(SocketChannel channel, ByteBuffer payload, int readLength) throws Exception {
        ByteBuffer sent = payload.duplicate();
        AtomicReference<Exception> failure = new AtomicReference<>();
        Thread writer = new Thread(() -> {
            try {
                while (sent.hasRemaining()) {
                    channel.write(sent);
                }
                channel.shutdownOutput();
            } catch (Exception e) {
                failure.set(e);
            }
        }, "hosts-echo-writer");
        writer.start();
        ByteBuffer in = ByteBuffer.allocateDirect(readLength);
        CRC32 crc = new CRC32();
        long received = 0;
        int n;
        while ((n = channel.read(in)) >= 0) {
            in.flip();
            crc.update(in);
            in.clear();
            received += n;
        }
        writer.join();
        if (failure.get() != null) {
            throw failure.get();
        }
        check(payload, received, crc.getValue());
        in.clear();
        if (channel.read(in) != -1) {
            throw new IllegalStateException("a read after end of stream did not find it again");
        }
    }

    /**
     * One round trip on a blocking channel to an echo server: message {@code index} of {@code size}
     * bytes out, the same bytes back into {@code in} (cleared first), checked by CRC-32.
     */
    static void roundTrip(SocketChannel channel, ByteBuffer in, int size, int index, String what) throws IOException {
        ByteBuffer out = payload(size, index);
        long crc = crc(out);
        while (out.hasRemaining()) {
            channel.write(out);
        }
        in.clear();
        while (in.hasRemaining()) {
            if (channel.read(in) < 0) {
                throw new EOFException("end of stream in " + what + " " + index);
            }
        }
        in.flip();
        if (crc(in) != crc) {
            throw new IllegalStateException(what + " " + index + " came back with other bytes (CRC-32)");
        }
    }

    private static void check(ByteBuffer payload, long received, long crc) {
        if (received != payload.remaining()) {
            throw new IllegalStateException("echo of " + payload.remaining() + " bytes came back with " + received);
        }
        if (crc != crc(payload)) {
            throw new IllegalStateException("echo of " + payload.remaining() + " bytes came back with other bytes (CRC-32)");
        }
    }

    /**
     * The same through a selector with a non-blocking channel: connects, exchanges round trips
     * until the path is decided, then sends {@code payload} while reading the echo, shuts the output
     * down and reads to end of stream. Returns the connection's path.
     */
    static String selector(InetSocketAddress address, ByteBuffer payload) throws Exception {
        try (Selector selector = Selector.open(); SocketChannel channel = SocketChannel.open()) {
            channel.configureBlocking(false);
            channel.connect(address);
            SelectionKey key = channel.register(selector, SelectionKey.OP_CONNECT);
            long deadline = System.nanoTime() + 120_000_000_000L;
            while (!channel.finishConnect()) {
                wait(selector, deadline);
            }
            ByteBuffer ping = ByteBuffer.allocateDirect(64);
            ByteBuffer pong = ByteBuffer.allocateDirect(64);
            long decideBy = System.nanoTime() + DECIDE_MILLIS * 1_000_000;
            String path;
            do {
                ping.clear();
                pong.clear();
                key.interestOps(SelectionKey.OP_WRITE);
                while (ping.hasRemaining()) {
                    wait(selector, deadline);
                    channel.write(ping);
                }
                key.interestOps(SelectionKey.OP_READ);
                while (pong.hasRemaining()) {
                    wait(selector, deadline);
                    if (channel.read(pong) < 0) {
                        throw new EOFException("the echo server closed the connection");
                    }
                }
                path = Hadronio.path(channel);
            } while (!Hadronio.decided(path) && System.nanoTime() < decideBy);
            ByteBuffer out = payload.duplicate();
            ByteBuffer in = ByteBuffer.allocateDirect(64 * 1024);
            CRC32 crc = new CRC32();
            long received = 0;
            boolean shut = false;
            while (true) {
                key.interestOps(SelectionKey.OP_READ | (shut ? 0 : SelectionKey.OP_WRITE));
                wait(selector, deadline);
                if (key.isWritable() && !shut) {
                    channel.write(out);
                    if (!out.hasRemaining()) {
                        channel.shutdownOutput();
                        shut = true;
                    }
                }
                if (key.isReadable()) {
                    int n = channel.read(in);
                    if (n < 0) {
                        break;
                    }
                    in.flip();
                    crc.update(in);
                    in.clear();
                    received += n;
                }
            }
            if (!shut) {
                throw new IllegalStateException("end of stream before the payload was sent");
            }
            check(payload, received, crc.getValue());
            return path;
        }
    }

    private static void wait(Selector selector, long deadline) throws IOException {
        long left = (deadline - System.nanoTime()) / 1_000_000;
        if (left <= 0) {
            throw new IOException("no progress before the deadline");
        }
        selector.selectedKeys().clear();
        selector.select(left);
    }
}
