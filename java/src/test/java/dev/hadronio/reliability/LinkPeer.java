package dev.hadronio.reliability;

import dev.hadronio.nio.HadronioSocketChannel;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.SelectionKey;
import java.nio.channels.Selector;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.util.SplittableRandom;

/**
 * One end of a stream for {@link LinkDownTest}, run in a network namespace. It opens channels
 * through {@code SocketChannel.open()}, i.e. the JVM-wide provider.
 *
 * <pre>
 * LinkPeer listen  &lt;host&gt; &lt;port&gt; &lt;write|read&gt; &lt;blocking|selector&gt;   accept one connection, then stream
 * LinkPeer connect &lt;host&gt; &lt;port&gt; &lt;write|read&gt; &lt;blocking|selector&gt;   connect, then stream
 * </pre>
 *
 * The connecting side first sends one byte, which the listening side reads, then the stream flows.
 * Writes are of random lengths from 1 byte to 1 MiB. In selector mode the channel is non-blocking
 * and the thread waits in {@code select()} without a timeout, so only readiness can end a wait.
 * Prints {@code PORT <port>} once listening (or {@code BIND-FAILED <exception>}), {@code CONNECTED}
 * once connected, {@code STREAMING <path>} once {@link #STREAMING_BYTES} moved (the path the
 * connection took: {@code ucx}, {@code tcp (...)} or {@code jdk}), {@code MOVED <bytes>} every
 * {@link #MOVED_STEP} bytes, and at the end of the stream
 * {@code ERROR <exception>} or {@code EOF}; then it waits to be killed. It exits by itself when its
 * stdin ends (the test JVM is gone).
 */
public final class LinkPeer {
    /** Moved before the peer reports {@code STREAMING}. */
    static final long STREAMING_BYTES = 8L << 20;
    /** A {@code MOVED} line every so many bytes. */
    static final long MOVED_STEP = 32L << 20;

    private LinkPeer() {
    }

    public static void main(String[] args) throws Exception {
        exitWithParent();
        String host = args[1];
        int port = Integer.parseInt(args[2]);
        boolean write = args[3].equals("write");
        boolean selector = args[4].equals("selector");
        boolean listen = args[0].equals("listen");
        SocketChannel channel;
        if (listen) {
            ServerSocketChannel server = ServerSocketChannel.open();
            try {
                server.bind(new InetSocketAddress(host, port));
            } catch (IOException e) {
                say("BIND-FAILED " + e);
                return;
            }
            say("PORT " + ((InetSocketAddress) server.getLocalAddress()).getPort());
            channel = server.accept();
        } else {
            channel = SocketChannel.open(new InetSocketAddress(host, port));
        }
        say("CONNECTED");
        try {
            // The client speaks first, as the protocols over such links do (and a client's offer
            // to upgrade goes with its first bytes): one byte, which the server reads first.
            if (listen) {
                ByteBuffer hello = ByteBuffer.allocate(1);
                while (hello.hasRemaining()) {
                    if (channel.read(hello) < 0) {
                        throw new IOException("the client closed before its first byte");
                    }
                }
            } else {
                channel.write(ByteBuffer.wrap(new byte[] {1}));
            }
            if (selector) {
                viaSelector(channel, write);
            } else if (write) {
                writeBlocking(channel);
            } else {
                readBlocking(channel);
            }
        } catch (IOException e) {
            say("ERROR " + e);
        }
        Thread.sleep(Long.MAX_VALUE);
    }

    /**
     * Exits when stdin ends, i.e. when the test JVM that started this one is gone, so that a
     * killed test leaves no JVM behind (in a namespace nobody would look into).
     */
    static void exitWithParent() {
        Thread watchdog = new Thread(() -> {
            try {
                while (System.in.read() >= 0) {
                    // nothing is sent; only the end matters
                }
            } catch (java.io.IOException e) {
                // as good as the end
            }
            Runtime.getRuntime().halt(3);
        }, "exit-with-parent");
        watchdog.setDaemon(true);
        watchdog.start();
    }

    static void say(String line) {
        System.out.println(line);
        System.out.flush();
    }

    static ByteBuffer randomBuffer() {
        SplittableRandom random = new SplittableRandom(42);
        ByteBuffer buffer = ByteBuffer.allocateDirect(1 << 20);
        while (buffer.hasRemaining()) {
            buffer.putLong(random.nextLong());
        }
        return buffer;
    }

    /** The path a connection took: {@code ucx}, {@code tcp (...)}, or {@code jdk}. */
    static String path(SocketChannel channel) throws IOException {
        if (channel instanceof HadronioSocketChannel) {
            return ((HadronioSocketChannel) channel).transportDescription().split("\n")[0];
        }
        return "jdk";
    }

    static final class Progress {
        final SocketChannel channel;
        long bytes;
        boolean reported;

        Progress(SocketChannel channel) {
            this.channel = channel;
        }

        /** When {@link #STREAMING_BYTES} had moved; the upgrade may finish a little later. */
        long streamingSince;

        void add(long n) throws IOException {
            long before = bytes;
            bytes += n;
            if (!reported && bytes >= STREAMING_BYTES) {
                // The upgrade runs while the stream flows over TCP: on a loaded machine 8 MiB can
                // pass before it is done, so the report waits for it (at most 10 s).
                String path = path(channel);
                long now = System.nanoTime();
                if (streamingSince == 0) {
                    streamingSince = now;
                }
                if (!path.startsWith("tcp (not upgraded yet)") || now - streamingSince > 10_000_000_000L) {
                    reported = true;
                    say("STREAMING " + path);
                }
            }
            if (bytes / MOVED_STEP != before / MOVED_STEP) {
                say("MOVED " + bytes);
            }
        }
    }

    static void writeBlocking(SocketChannel channel) throws IOException {
        SplittableRandom random = new SplittableRandom(1);
        ByteBuffer buffer = randomBuffer();
        Progress progress = new Progress(channel);
        while (true) {
            buffer.clear().limit(1 + random.nextInt(1 << 20));
            while (buffer.hasRemaining()) {
                progress.add(channel.write(buffer));
            }
        }
    }

    static void readBlocking(SocketChannel channel) throws IOException {
        ByteBuffer buffer = ByteBuffer.allocateDirect(256 * 1024);
        Progress progress = new Progress(channel);
        while (true) {
            buffer.clear();
            int n = channel.read(buffer);
            if (n < 0) {
                say("EOF");
                return;
            }
            progress.add(n);
        }
    }

    static void viaSelector(SocketChannel channel, boolean write) throws IOException {
        SplittableRandom random = new SplittableRandom(1);
        ByteBuffer buffer = write ? randomBuffer() : ByteBuffer.allocateDirect(256 * 1024);
        buffer.limit(0);
        Progress progress = new Progress(channel);
        channel.configureBlocking(false);
        Selector selector = channel.provider().openSelector();
        SelectionKey key = channel.register(selector, write ? SelectionKey.OP_WRITE : SelectionKey.OP_READ);
        while (true) {
            selector.select();
            if (!selector.selectedKeys().remove(key)) {
                continue;
            }
            if (write) {
                while (true) {
                    if (!buffer.hasRemaining()) {
                        buffer.clear().limit(1 + random.nextInt(1 << 20));
                    }
                    progress.add(channel.write(buffer));
                    if (buffer.hasRemaining()) {
                        break;
                    }
                }
            } else {
                while (true) {
                    buffer.clear();
                    int n = channel.read(buffer);
                    if (n < 0) {
                        say("EOF");
                        return;
                    }
                    if (n == 0) {
                        break;
                    }
                    progress.add(n);
                }
            }
        }
    }
}
