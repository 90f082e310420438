package dev.hadronio.examples.transport;

import org.HdrHistogram.Histogram;

import java.io.EOFException;
import java.io.IOException;
import java.net.StandardSocketOptions;
import java.nio.ByteBuffer;
import java.nio.channels.SocketChannel;

/**
 * The message loops over a {@link SocketChannel}; subclasses say how to wait (blocking calls or a Selector).
 * Buffers are direct and grow outside the loops; the loops allocate nothing.
 */
abstract class ChannelTransport implements MessageTransport {

    /** Reads for bulk receiving are at least this large (a read may cover many messages). */
    private static final int MIN_RECEIVE_CHUNK = 64 * 1024;

    protected final SocketChannel channel;
    private ByteBuffer sendBuffer = ByteBuffer.allocateDirect(MIN_RECEIVE_CHUNK);
    private ByteBuffer receiveBuffer = ByteBuffer.allocateDirect(MIN_RECEIVE_CHUNK);

    /** hadroNIO's {@code HadronioProvider.transportOf(channel)}; the JDK's channels go over kernel TCP. */
    @Override
    public String path() {
        try {
            Class<?> provider = channel.provider().getClass();
            if (!provider.getName().equals("dev.hadronio.HadronioProvider")) {
                return "tcp (the JDK's channel)";
            }
            return (String) provider.getMethod("transportOf", SocketChannel.class).invoke(null, channel);
        } catch (ReflectiveOperationException e) {
            return null;
        }
    }

    ChannelTransport(SocketChannel channel) throws IOException {
        this.channel = channel;
        channel.setOption(StandardSocketOptions.TCP_NODELAY, Boolean.TRUE);
    }

    /** Writes every remaining byte of {@code buffer}. */
    protected abstract void writeFully(ByteBuffer buffer) throws IOException;

    /** Reads at least one byte into {@code buffer} (which has room), or throws at end of stream. */
    protected abstract int readSome(ByteBuffer buffer) throws IOException;

    @Override
    public void sendMessages(int count, int size, int flushThreshold) throws IOException {
        ByteBuffer buffer = sendBuffer(size);
        for (int i = 0; i < count; i++) {
            buffer.limit(size).position(0);
            writeFully(buffer);
        }
    }

    @Override
    public void receiveMessages(int count, int size) throws IOException {
        ByteBuffer buffer = receiveBuffer(Math.max(size, MIN_RECEIVE_CHUNK));
        long remaining = (long) count * size;
        while (remaining > 0) {
            buffer.clear();
            if (remaining < buffer.capacity()) {
                buffer.limit((int) remaining);
            }
            remaining -= readSome(buffer);
        }
    }

    @Override
    public void ping(int count, int size, Histogram rttNanos) throws IOException {
        ByteBuffer out = sendBuffer(size);
        ByteBuffer in = receiveBuffer(size);
        for (int i = 0; i < count; i++) {
            long start = System.nanoTime();
            out.limit(size).position(0);
            writeFully(out);
            in.limit(size).position(0);
            readFully(in);
            if (rttNanos != null) {
                rttNanos.recordValue(System.nanoTime() - start);
            }
        }
    }

    @Override
    public void pong(int count, int size) throws IOException {
        ByteBuffer out = sendBuffer(size);
        ByteBuffer in = receiveBuffer(size);
        for (int i = 0; i < count; i++) {
            in.limit(size).position(0);
            readFully(in);
            out.limit(size).position(0);
            writeFully(out);
        }
    }

    @Override
    public void writeBytes(ByteBuffer src) throws IOException {
        writeFully(src);
    }

    @Override
    public void readBytes(ByteBuffer dst) throws IOException {
        readFully(dst);
    }

    private void readFully(ByteBuffer buffer) throws IOException {
        while (buffer.hasRemaining()) {
            readSome(buffer);
        }
    }

    /** Turns a read's -1 into an exception that says how far the stream got. */
    protected static int checkedCount(int n, ByteBuffer buffer) throws EOFException {
        if (n < 0) {
            throw new EOFException("connection closed by the peer with " + buffer.remaining()
                    + " bytes still expected in this read");
        }
        return n;
    }

    private ByteBuffer sendBuffer(int size) {
        if (sendBuffer.capacity() < size) {
            sendBuffer = ByteBuffer.allocateDirect(size);
        }
        return sendBuffer;
    }

    private ByteBuffer receiveBuffer(int size) {
        if (receiveBuffer.capacity() < size) {
            receiveBuffer = ByteBuffer.allocateDirect(size);
        }
        return receiveBuffer;
    }

    @Override
    public void close() throws IOException {
        channel.close();
    }

    @Override
    public String toString() {
        return getClass().getSimpleName() + "[" + channel + "]";
    }
}
