package dev.hadronio.examples.bench;

import dev.hadronio.examples.transport.MessageTransport;
import dev.hadronio.examples.transport.TransportFactory;
import dev.hadronio.examples.transport.TransportListener;

import java.io.Closeable;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;

/**
 * Everything one side of a bench run holds: its role, the control connection, the main data connection and,
 * once a bulk transfer asks for them, N more data connections. The control connection uses the data port + 1.
 */
final class BenchSession implements Closeable {

    static final Duration CONNECT_PATIENCE = Duration.ofSeconds(60);

    final boolean server;
    final Control control;
    final MessageTransport main;
    final int flushThreshold;
    /** Units of work done in the current step (messages, round trips or buffers), for the progress display. */
    final AtomicLong progress = new AtomicLong();

    private final TransportFactory factory;
    private final TransportListener listener;
    private final InetSocketAddress remote;
    private final List<MessageTransport> bulk = new ArrayList<>();

    private BenchSession(boolean server, Control control, MessageTransport main, int flushThreshold,
                         TransportFactory factory, TransportListener listener, InetSocketAddress remote) {
        this.server = server;
        this.control = control;
        this.main = main;
        this.flushThreshold = flushThreshold;
        this.factory = factory;
        this.listener = listener;
        this.remote = remote;
    }

    static InetSocketAddress controlAddress(InetSocketAddress data) {
        if (data.getPort() == 0 || data.getPort() == 65535) {
            throw new IllegalArgumentException("bench needs a fixed data port below 65535 (the control connection "
                    + "uses the next one), got " + data.getPort());
        }
        return new InetSocketAddress(data.getAddress(), data.getPort() + 1);
    }

    /** Listens on {@code local} (data) and the next port (control) and waits for the client. */
    static BenchSession accept(InetSocketAddress local, TransportFactory factory, long fingerprint,
                               int flushThreshold) throws IOException {
        InetSocketAddress controlLocal = controlAddress(local);
        TransportListener listener = factory.listen(local);
        Control control = null;
        try {
            control = Control.accept(controlLocal);
            control.greet(fingerprint);
            MessageTransport main = listener.accept();
            return new BenchSession(true, control, main, flushThreshold, factory, listener, null);
        } catch (IOException | RuntimeException e) {
            if (control != null) {
                control.close();
            }
            listener.close();
            throw e;
        }
    }

    /** Connects the control connection and the main data connection to a bench server. */
    static BenchSession connect(InetSocketAddress remote, TransportFactory factory, long fingerprint,
                                int flushThreshold) throws IOException {
        Control control = Control.connect(controlAddress(remote), CONNECT_PATIENCE);
        try {
            control.greet(fingerprint);
            MessageTransport main = factory.connect(remote, CONNECT_PATIENCE);
            return new BenchSession(false, control, main, flushThreshold, factory, null, remote);
        } catch (IOException | RuntimeException e) {
            control.close();
            throw e;
        }
    }

    /**
     * The N bulk connections, made on first use (and again if N changes). Each client connection announces its
     * index, so connection i on one side is connection i on the other whatever order accepts happen in.
     */
    List<MessageTransport> bulkConnections(int n) throws IOException {
        if (bulk.size() == n) {
            return bulk;
        }
        closeBulk();
        MessageTransport[] ordered = new MessageTransport[n];
        ByteBuffer index = ByteBuffer.allocate(Integer.BYTES);
        for (int i = 0; i < n; i++) {
            index.clear();
            if (server) {
                MessageTransport t = listener.accept();
                t.readBytes(index);
                int k = index.getInt(0);
                if (k < 0 || k >= n || ordered[k] != null) {
                    t.close();
                    throw new IOException("bulk connection announced a bad index " + k + " (expected 0.." + (n - 1)
                            + ")");
                }
                ordered[k] = t;
            } else {
                MessageTransport t = factory.connect(remote, CONNECT_PATIENCE);
                index.putInt(0, i);
                t.writeBytes(index);
                ordered[i] = t;
            }
        }
        for (MessageTransport t : ordered) {
            bulk.add(t);
        }
        return bulk;
    }

    private void closeBulk() throws IOException {
        for (MessageTransport t : bulk) {
            t.close();
        }
        bulk.clear();
    }

    @Override
    public void close() throws IOException {
        try {
            closeBulk();
            main.close();
            if (listener != null) {
                listener.close();
            }
        } finally {
            control.close();
        }
    }
}
