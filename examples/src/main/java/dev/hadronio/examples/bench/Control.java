package dev.hadronio.examples.bench;

import java.io.BufferedInputStream;
import java.io.BufferedOutputStream;
import java.io.Closeable;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.EOFException;
import java.io.IOException;
import java.io.InterruptedIOException;
import java.net.ConnectException;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.time.Duration;

/**
 * The off-channel between the two bench processes: a plain {@code java.net.Socket}, which in JDK 17 does not go
 * through the {@code SelectorProvider}, so it never uses the provider under test. It carries phase barriers,
 * "all received" signals and the client's figures. Writes may come from any thread; reads from one thread.
 */
final class Control implements Closeable {

    private static final int MAGIC = 0x48424e43; // "HBNC"
    private static final int DONE = 0x444f4e45; // "DONE"
    private static final long RETRY_MILLIS = 100;

    private final Socket socket;
    private final DataInputStream in;
    private final DataOutputStream out;

    private Control(Socket socket) throws IOException {
        this.socket = socket;
        socket.setTcpNoDelay(true);
        in = new DataInputStream(new BufferedInputStream(socket.getInputStream()));
        out = new DataOutputStream(new BufferedOutputStream(socket.getOutputStream()));
    }

    /** Waits for the client on {@code local}. */
    static Control accept(InetSocketAddress local) throws IOException {
        try (ServerSocket server = new ServerSocket()) {
            server.setReuseAddress(true);
            try {
                server.bind(local);
            } catch (IOException e) {
                throw new IOException("cannot listen for the control connection on " + local + ": "
                        + e.getMessage(), e);
            }
            return new Control(server.accept());
        }
    }

    /** Connects to the server, retrying while it is not up yet. */
    static Control connect(InetSocketAddress remote, Duration patience) throws IOException {
        long deadline = System.nanoTime() + patience.toNanos();
        while (true) {
            Socket socket = new Socket();
            try {
                socket.connect(remote);
                return new Control(socket);
            } catch (ConnectException e) {
                socket.close();
                if (System.nanoTime() - deadline > 0) {
                    throw new IOException("no bench server answered on " + remote + " (control connection) within "
                            + patience.getSeconds() + " s", e);
                }
                try {
                    Thread.sleep(RETRY_MILLIS);
                } catch (InterruptedException interrupted) {
                    Thread.currentThread().interrupt();
                    throw new InterruptedIOException("interrupted while connecting to " + remote);
                }
            } catch (IOException e) {
                socket.close();
                throw e;
            }
        }
    }

    /** Both sides say which run they execute; a mismatch is an error on both sides. */
    void greet(long fingerprint) throws IOException {
        synchronized (out) {
            out.writeInt(MAGIC);
            out.writeLong(fingerprint);
            out.flush();
        }
        int magic = readInt("greeting");
        if (magic != MAGIC) {
            throw new IOException(String.format("the peer is not a hadronio bench process (magic 0x%08x)", magic));
        }
        long theirs = in.readLong();
        if (theirs != fingerprint) {
            throw new IOException(String.format("the peer runs a different description, flavour or thread count"
                    + " (fingerprint %016x, ours %016x)", theirs, fingerprint));
        }
    }

    /** A barrier: returns once both sides have reached step {@code step}. */
    void sync(int step) throws IOException {
        synchronized (out) {
            out.writeInt(step);
            out.flush();
        }
        int theirs = readInt("barrier " + step);
        if (theirs != step) {
            throw new IOException("control channel out of step: we are at " + step + ", the peer at " + theirs);
        }
    }

    /** Tells the peer that everything it sent has arrived. */
    void sendDone() throws IOException {
        synchronized (out) {
            out.writeInt(DONE);
            out.flush();
        }
    }

    /** Waits until the peer says that everything we sent has arrived. */
    void awaitDone() throws IOException {
        int token = readInt("the peer's receipt");
        if (token != DONE) {
            throw new IOException("control channel out of step: expected DONE, got " + token);
        }
    }

    void sendDoubles(double... values) throws IOException {
        synchronized (out) {
            out.writeInt(values.length);
            for (double v : values) {
                out.writeDouble(v);
            }
            out.flush();
        }
    }

    double[] receiveDoubles(int expected) throws IOException {
        int n = readInt("figures");
        if (n != expected) {
            throw new IOException("control channel out of step: expected " + expected + " figures, got " + n);
        }
        double[] values = new double[n];
        for (int i = 0; i < n; i++) {
            values[i] = in.readDouble();
        }
        return values;
    }

    private int readInt(String what) throws IOException {
        try {
            return in.readInt();
        } catch (EOFException e) {
            throw new EOFException("the peer closed the control connection while we waited for " + what);
        }
    }

    @Override
    public void close() throws IOException {
        socket.close();
    }
}
