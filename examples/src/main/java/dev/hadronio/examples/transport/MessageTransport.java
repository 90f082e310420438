package dev.hadronio.examples.transport;

import org.HdrHistogram.Histogram;

import java.io.Closeable;
import java.io.IOException;
import java.nio.ByteBuffer;

/**
 * One connection as the benchmarks use it: fixed-size messages on a byte stream. Each method blocks the calling
 * thread until its part is done. A sending method and a receiving method may run at the same time on two threads
 * (each direction has its own buffer); two methods of the same direction never do. The measurement methods
 * allocate nothing per message.
 */
public interface MessageTransport extends Closeable {

    /** Writes {@code count} messages of {@code size} bytes, flushing every {@code flushThreshold} (netty). */
    void sendMessages(int count, int size, int flushThreshold) throws IOException;

    /** Reads exactly {@code count * size} bytes (in as few reads as the stream allows). */
    void receiveMessages(int count, int size) throws IOException;

    /**
     * Sends a message and waits for the peer's answer of the same size, {@code count} times. If {@code rttNanos} is
     * not null, each round trip is recorded into it (in nanoseconds).
     */
    void ping(int count, int size, Histogram rttNanos) throws IOException;

    /** Answers {@code count} messages of {@code size} bytes with a message of the same size. */
    void pong(int count, int size) throws IOException;

    /** Writes all remaining bytes of {@code src} (for small control data, not measured). */
    void writeBytes(ByteBuffer src) throws IOException;

    /** Reads until {@code dst} is full (for small control data, not measured). */
    void readBytes(ByteBuffer dst) throws IOException;

    /** The path the connection's data takes (hadroNIO's {@code transportOf}), or null if not known. */
    default String path() {
        return null;
    }
}
