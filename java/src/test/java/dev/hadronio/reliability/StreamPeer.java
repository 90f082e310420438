package dev.hadronio.reliability;

import java.io.IOException;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.util.SplittableRandom;

/**
 * A peer that streams until it is killed, for {@link PeerKillTest}. It opens
 * channels through {@code SocketChannel.open()}, i.e. the JVM-wide provider.
 *
 * <pre>
 * StreamPeer connect &lt;host&gt; &lt;port&gt; &lt;write|read&gt;   connect, then write or read forever
 * StreamPeer listen &lt;host&gt; &lt;port&gt; &lt;write|read&gt;    accept one connection, then write or read forever
 * </pre>
 *
 * Writes are blocking, of random lengths from 1 byte to 1 MiB. Prints {@code PORT <port>} once
 * listening, {@code CONNECTED <path>} once connected and {@code ERROR <millis since epoch> <exception>}
 * or {@code EOF <millis>} if the stream ends; exits 0 after that.
 */
public final class StreamPeer {
    private StreamPeer() {
    }

    public static void main(String[] args) throws Exception {
        String host = args[1];
        int port = Integer.parseInt(args[2]);
        boolean write = args[3].equals("write");
        SocketChannel channel;
        if (args[0].equals("listen")) {
            ServerSocketChannel server = ServerSocketChannel.open();
            server.bind(new InetSocketAddress(host, port));
            System.out.println("PORT " + ((InetSocketAddress) server.getLocalAddress()).getPort());
            System.out.flush();
            channel = server.accept();
        } else {
            channel = SocketChannel.open(new InetSocketAddress(host, port));
        }
        System.out.println("CONNECTED " + channel.getLocalAddress() + " " + channel.getRemoteAddress());
        System.out.flush();
        try {
            if (write) {
                writeForever(channel);
            } else {
                readForever(channel);
            }
        } catch (IOException e) {
            System.out.println("ERROR " + System.currentTimeMillis() + " " + e);
        }
        System.out.flush();
    }

    static void writeForever(SocketChannel channel) throws IOException {
        SplittableRandom random = new SplittableRandom(42);
        ByteBuffer buffer = ByteBuffer.allocateDirect(1 << 20);
        while (buffer.hasRemaining()) {
            buffer.putLong(random.nextLong());
        }
        while (true) {
            int length = 1 + random.nextInt(1 << 20);
            buffer.clear().limit(length);
            while (buffer.hasRemaining()) {
                channel.write(buffer);
            }
        }
    }

    static void readForever(SocketChannel channel) throws IOException {
        ByteBuffer buffer = ByteBuffer.allocateDirect(64 * 1024);
        while (true) {
            buffer.clear();
            if (channel.read(buffer) < 0) {
                System.out.println("EOF " + System.currentTimeMillis());
                return;
            }
        }
    }
}
