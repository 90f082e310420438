package dev.hadronio.reliability;

import dev.hadronio.nio.HadronioSocketChannel;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.atomic.AtomicReference;
import java.util.zip.CRC32C;

/**
 * One end of {@link IntegrityTest}: {@code connections} connections between two JVMs, each carrying a
 * stream in both directions at once, in blocking mode, on the JVM-wide provider.
 *
 * <pre>
 * IntegrityPeer listen  &lt;host&gt; 0      &lt;connections&gt; &lt;total bytes&gt;   prints PORT &lt;port&gt;, accepts
 * IntegrityPeer connect &lt;host&gt; &lt;port&gt; &lt;connections&gt; &lt;total bytes&gt;   connects
 * </pre>
 *
 * <p>The client opens the connections and sends each one's number (4 bytes) first; on hadroNIO it then
 * exchanges one-byte round trips on each until that connection's path is decided (the upgrade
 * takes a few round trips), and then the server does the same for its end (which decides a little
 * later), so that the streams test the path the connection keeps. On every connection
 * each side then runs a writer thread and a reader thread. The writer sends its stream as messages of
 * 1 B .. 16 MiB (log-uniform; the first message of every stream is 1 byte and the second of
 * connection 0's is 16 MiB), each one blocking {@code write} of a slice of a 32 MiB random pool at a
 * random offset, from a direct buffer or (every fourth message) a heap buffer; a blocking write that
 * returns with bytes left is an error. Then it shuts its output down. The reader reads with random
 * lengths of 1 B .. 4 MiB into direct or heap buffers until end of stream, compares every byte with
 * the stream it expects (it replays the writer's choices from the same seed) and keeps a CRC32C. The
 * total is split over the {@code 2 * connections} streams; connection 0's get at least 16 MiB + 1.
 *
 * <p>Lines: {@code PATH <connection> <transport description>} (hadroNIO only), {@code START <epoch ms>},
 * {@code SENT <connection> <bytes> <crc32c>}, {@code RECEIVED <connection> <bytes> <crc32c>
 * <first wrong stream offset or -1>}, {@code END <epoch ms>}, then it waits for a line on stdin (so
 * that nothing still on its way is lost by exiting early), closes everything and exits 0. An error
 * prints {@code FAILED ...} and exits 1.
 */
public final class IntegrityPeer {
    static final int MAX_MESSAGE = 16 << 20;
    static final int MAX_READ = 4 << 20;
    static final int POOL_LENGTH = 32 << 20;
    static final long SEED = 0x1D_E9_81_7E;

    private final ByteBuffer directPool;
    private final byte[] heapPool;
    private final AtomicReference<Throwable> failure = new AtomicReference<>();

    private IntegrityPeer() {
        heapPool = new byte[POOL_LENGTH];
        SplittableRandom random = new SplittableRandom(SEED);
        ByteBuffer filler = ByteBuffer.wrap(heapPool);
        while (filler.hasRemaining()) {
            filler.putLong(random.nextLong());
        }
        directPool = ByteBuffer.allocateDirect(POOL_LENGTH);
        directPool.put(heapPool).clear();
    }

    /** Bytes of the stream of {@code connection} in one direction (both directions carry as many). */
    static long streamBytes(long total, int connections, int connection) {
        long first = Math.max(total / (2L * connections), MAX_MESSAGE + 1L);
        if (connections == 1) {
            return first;
        }
        long rest = Math.max(0, total - 2 * first);
        long each = rest / (2L * (connections - 1));
        if (connection == 0) {
            return first;
        }
        return connection == connections - 1 ? rest / 2 - each * (connections - 2) : each;
    }

    /** The messages of one stream, replayed identically by its writer and its reader. */
    static final class Messages {
        private final SplittableRandom random;
        private final boolean forceLarge;
        private long left;
        private int index;
        int length;
        int offset;
        boolean heap;

        Messages(int connection, boolean fromClient, long bytes) {
            random = new SplittableRandom(SEED * 31 + connection * 2L + (fromClient ? 1 : 0));
            forceLarge = connection == 0;
            left = bytes;
        }

        /** Moves to the next message; false when the stream is complete. */
        boolean next() {
            if (left == 0) {
                return false;
            }
            int wanted;
            if (index == 0) {
                wanted = 1;
            } else if (index == 1 && forceLarge) {
                wanted = MAX_MESSAGE;
            } else {
                wanted = (int) Math.min(MAX_MESSAGE, Math.round(Math.exp(random.nextDouble() * Math.log(MAX_MESSAGE))));
            }
            length = (int) Math.max(1, Math.min(wanted, left));
            offset = random.nextInt(POOL_LENGTH - length + 1);
            heap = random.nextInt(4) == 0;
            left -= length;
            index++;
            return true;
        }
    }

    public static void main(String[] args) {
        ChildJvm.runMain(() -> {
            new IntegrityPeer().run(args[0].equals("listen"), args[1], Integer.parseInt(args[2]),
                    Integer.parseInt(args[3]), Long.parseLong(args[4]));
        });
    }

    private void run(boolean listen, String host, int port, int connections, long total) throws Exception {
        SocketChannel[] channels = new SocketChannel[connections];
        if (listen) {
            ServerSocketChannel server = ServerSocketChannel.open();
            server.bind(new InetSocketAddress(host, port), 64);
            System.out.println("PORT " + ((InetSocketAddress) server.getLocalAddress()).getPort());
            System.out.flush();
            for (int i = 0; i < connections; i++) {
                SocketChannel channel = server.accept();
                ByteBuffer number = ByteBuffer.allocate(4);
                while (number.hasRemaining()) {
                    if (channel.read(number) < 0) {
                        throw new IOException("end of stream before the connection number");
                    }
                }
                channels[number.getInt(0)] = channel;
                echoUntilGo(channel);
                pingUntilUpgraded(channel);
            }
            server.close();
        } else {
            for (int i = 0; i < connections; i++) {
                channels[i] = SocketChannel.open(new InetSocketAddress(host, port));
                ByteBuffer number = ByteBuffer.allocate(4).putInt(0, i);
                while (number.hasRemaining()) {
                    channels[i].write(number);
                }
                pingUntilUpgraded(channels[i]);
                echoUntilGo(channels[i]);
            }
        }
        System.out.println("START " + System.currentTimeMillis());
        System.out.flush();
        List<Thread> threads = new ArrayList<>();
        for (int i = 0; i < connections; i++) {
            int connection = i;
            long bytes = streamBytes(total, connections, i);
            threads.add(start("writer-" + i, () -> write(channels[connection], connection, !listen, bytes)));
            threads.add(start("reader-" + i, () -> read(channels[connection], connection, listen, bytes)));
        }
        for (Thread thread : threads) {
            thread.join();
        }
        Throwable t = failure.get();
        if (t != null) {
            throw new IllegalStateException("a stream failed: " + t, t);
        }
        System.out.println("END " + System.currentTimeMillis());
        for (int i = 0; i < connections; i++) {
            if (channels[i] instanceof HadronioSocketChannel) {
                System.out.println("PATH " + i + " "
                        + ((HadronioSocketChannel) channels[i]).transportDescription().replace('\n', '|'));
            }
        }
        System.out.flush();
        new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8)).readLine();
        for (SocketChannel channel : channels) {
            channel.close();
        }
    }

    /**
     * One-byte round trips until this end's path is decided (over UCX, or on TCP for a reason; at
     * most 10 s), then 'g'. The client pings first and the server after it, each while the other
     * echoes ({@link #echoUntilGo}).
     */
    private static void pingUntilUpgraded(SocketChannel channel) throws IOException {
        long deadline = System.nanoTime() + 10_000_000_000L;
        boolean hadronio = channel instanceof HadronioSocketChannel;
        while (hadronio && System.nanoTime() - deadline < 0
                && ((HadronioSocketChannel) channel).transportDescription().startsWith("tcp (not upgraded yet)")) {
            exchange(channel, (byte) 'p');
        }
        exchange(channel, (byte) 'g');
    }

    /** Echoes the peer's bytes up to its 'g'. */
    private static void echoUntilGo(SocketChannel channel) throws IOException {
        ByteBuffer one = ByteBuffer.allocate(1);
        while (true) {
            one.clear();
            while (one.hasRemaining()) {
                if (channel.read(one) < 0) {
                    throw new IOException("end of stream during the upgrade round trips");
                }
            }
            one.flip();
            while (one.hasRemaining()) {
                channel.write(one);
            }
            if (one.get(0) == 'g') {
                return;
            }
        }
    }

    private static void exchange(SocketChannel channel, byte value) throws IOException {
        ByteBuffer one = ByteBuffer.allocate(1).put(0, value);
        while (one.hasRemaining()) {
            channel.write(one);
        }
        one.clear();
        while (one.hasRemaining()) {
            if (channel.read(one) < 0) {
                throw new IOException("end of stream during the upgrade round trips");
            }
        }
    }

    interface Body {
        void run() throws Exception;
    }

    private Thread start(String name, Body body) {
        Thread thread = new Thread(() -> {
            try {
                body.run();
            } catch (Throwable t) {
                failure.compareAndSet(null, t);
                System.out.println("FAILED " + name + ": " + t);
                t.printStackTrace(System.out);
                System.out.flush();
            }
        }, name);
        thread.start();
        return thread;
    }

    private void write(SocketChannel channel, int connection, boolean fromClient, long bytes) throws IOException {
        Messages messages = new Messages(connection, fromClient, bytes);
        CRC32C crc = new CRC32C();
        long sent = 0;
        while (messages.next()) {
            ByteBuffer message;
            if (messages.heap) {
                message = ByteBuffer.wrap(heapPool, messages.offset, messages.length);
            } else {
                message = directPool.duplicate();
                message.limit(messages.offset + messages.length).position(messages.offset);
            }
            ByteBuffer copy = message.duplicate();
            int n = channel.write(message);
            if (message.hasRemaining()) {
                throw new IllegalStateException("connection " + connection + ": a blocking write of " + messages.length
                        + " bytes returned " + n + " with " + message.remaining() + " left");
            }
            crc.update(copy);
            sent += messages.length;
        }
        channel.shutdownOutput();
        synchronized (System.out) {
            System.out.println("SENT " + connection + " " + sent + " " + crc.getValue());
            System.out.flush();
        }
    }

    private void read(SocketChannel channel, int connection, boolean fromClient, long bytes) throws IOException {
        Messages messages = new Messages(connection, fromClient, bytes);
        ByteBuffer direct = ByteBuffer.allocateDirect(MAX_READ);
        ByteBuffer heap = ByteBuffer.allocate(256 * 1024);
        SplittableRandom random = new SplittableRandom(SEED ^ (connection * 977L + (fromClient ? 1 : 0)));
        CRC32C crc = new CRC32C();
        long received = 0;
        long wrongAt = -1;
        int inMessage = 0;
        boolean more = messages.next();
        while (true) {
            boolean useHeap = random.nextInt(4) == 0;
            ByteBuffer buffer = useHeap ? heap : direct;
            int wanted = (int) Math.min(buffer.capacity(), Math.round(Math.exp(random.nextDouble() * Math.log(MAX_READ))));
            buffer.clear().limit(Math.max(1, wanted));
            int n = channel.read(buffer);
            if (n < 0) {
                break;
            }
            buffer.flip();
            crc.update(buffer.duplicate());
            while (buffer.hasRemaining()) {
                if (!more) {
                    if (wrongAt < 0) {
                        wrongAt = received;
                    }
                    received += buffer.remaining();
                    break;
                }
                int take = Math.min(buffer.remaining(), messages.length - inMessage);
                ByteBuffer got = buffer.duplicate();
                got.limit(got.position() + take);
                ByteBuffer expected = directPool.duplicate();
                expected.limit(messages.offset + inMessage + take).position(messages.offset + inMessage);
                int at = expected.mismatch(got);
                if (at >= 0 && wrongAt < 0) {
                    wrongAt = received + at;
                }
                buffer.position(buffer.position() + take);
                received += take;
                inMessage += take;
                if (inMessage == messages.length) {
                    inMessage = 0;
                    more = messages.next();
                }
            }
        }
        synchronized (System.out) {
            System.out.println("RECEIVED " + connection + " " + received + " " + crc.getValue() + " " + wrongAt);
            System.out.flush();
        }
    }
}
