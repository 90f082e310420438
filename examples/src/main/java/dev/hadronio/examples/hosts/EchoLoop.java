package dev.hadronio.examples.hosts;

import java.io.EOFException;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.SocketChannel;

/**
 * Round trips of 16 KiB, each message different and checked, on a thread of its own until it is
 * stopped: what keeps a connection busy while a fault is played, and shows afterwards that every
 * byte came back once and in order.
 */
@SuppressWarnings("try") // close() may throw InterruptedException: callers let it through
final class EchoLoop implements AutoCloseable {
    static final int MESSAGE = 16 * 1024;

    private final SocketChannel channel;
    private final Thread thread;
    private volatile boolean stop;
    private volatile long rounds;
    private volatile Exception failure;

    EchoLoop(InetSocketAddress echo) throws Exception {
        channel = SocketChannel.open(echo);
        Echo.requireRdma("the echo loop's connection", Echo.decide(channel));
        thread = new Thread(() -> {
            try {
                while (!stop) {
                    round(channel, rounds);
                    rounds++;
                }
            } catch (Exception e) {
                failure = e;
            }
        }, "hosts-echo-loop");
        thread.start();
    }

    /** One round trip of message {@code round}: sends it, reads it back, fails unless it is the same. */
    static void round(SocketChannel channel, long round) throws IOException {
        ByteBuffer out = Echo.payload(MESSAGE, round);
        long crc = Echo.crc(out);
        while (out.hasRemaining()) {
            channel.write(out);
        }
        ByteBuffer in = ByteBuffer.allocateDirect(MESSAGE);
        while (in.hasRemaining()) {
            if (channel.read(in) < 0) {
                throw new EOFException("end of stream in round " + round);
            }
        }
        in.flip();
        if (Echo.crc(in) != crc) {
            throw new IllegalStateException("round " + round + " came back with other bytes (CRC-32)");
        }
    }

    long rounds() {
        Exception e = failure;
        if (e != null) {
            throw new IllegalStateException("after " + rounds + " round trips: " + e, e);
        }
        return rounds;
    }

    SocketChannel channel() {
        return channel;
    }

    /** Waits until {@code more} round trips past {@code from} are done, at most {@code seconds}. */
    void awaitRounds(long from, long more, long seconds) throws InterruptedException {
        long deadline = System.nanoTime() + seconds * 1_000_000_000L;
        while (rounds() < from + more) {
            if (System.nanoTime() > deadline) {
                throw new IllegalStateException("only " + (rounds - from) + " of " + more + " round trips within " + seconds + " s");
            }
            Thread.sleep(50);
        }
    }

    @Override
    public void close() throws Exception {
        stop = true;
        thread.join(60_000);
        channel.close();
        rounds();
    }
}
