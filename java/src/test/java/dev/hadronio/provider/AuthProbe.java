package dev.hadronio.provider;

import dev.hadronio.nio.HadronioSocketChannel;
import java.net.ConnectException;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;

/**
 * One side of an authenticated exchange, run in its own JVM (the secret is per JVM):
 * {@code server} prints its port, echoes until end of stream and reports the path;
 * {@code client PORT} exchanges messages until the connection is upgraded, closes its output,
 * reads end of stream and reports the path, or the error either side hit. {@code sink} reads
 * until end of stream or an error and reports how many bytes it got; {@code writer PORT} writes
 * 8 MiB at once after connecting.
 */
public final class AuthProbe {
    private AuthProbe() {
    }

    public static void main(String[] args) throws Exception {
        if (args[0].equals("sink")) {
            sink();
        } else if (args[0].equals("writer")) {
            writer(Integer.parseInt(args[1]));
        } else if (args[0].equals("server")) {
            try (ServerSocketChannel server = ServerSocketChannel.open()) {
                server.bind(new InetSocketAddress("127.0.0.1", 0));
                System.out.println("PORT " + ((InetSocketAddress) server.getLocalAddress()).getPort());
                System.out.flush();
                try (SocketChannel channel = server.accept()) {
                    ByteBuffer buffer = ByteBuffer.allocate(64);
                    try {
                        int total = 0;
                        for (int n; (n = channel.read(buffer)) > 0; buffer.clear()) {
                            total += n;
                            buffer.flip();
                            channel.write(buffer);
                        }
                        System.out.println("SERVER echoed " + total + " path " + path(channel));
                    } catch (Exception e) {
                        System.out.println("SERVER error " + e.getMessage());
                    }
                }
            }
        } else {
            int port = Integer.parseInt(args[1]);
            try (SocketChannel channel = SocketChannel.open()) {
                for (int attempt = 0; ; attempt++) {
                    try {
                        channel.connect(new InetSocketAddress("127.0.0.1", port));
                        break;
                    } catch (ConnectException e) {
                        if (attempt > 100) {
                            throw e;
                        }
                        Thread.sleep(50);
                    }
                }
                try {
                    // Round trips until the upgrade is done (it completes after the first
                    // exchange) or an error surfaces.
                    String path = path(channel);
                    for (int round = 0; round < 50 && !path.startsWith("ucx"); round++) {
                        channel.write(ByteBuffer.wrap("hello".getBytes("UTF-8")));
                        ByteBuffer reply = ByteBuffer.allocate(5);
                        while (reply.hasRemaining()) {
                            if (channel.read(reply) < 0) {
                                throw new java.io.EOFException("server closed");
                            }
                        }
                        path = path(channel);
                    }
                    channel.shutdownOutput();
                    int n = channel.read(ByteBuffer.allocate(8));
                    System.out.println("CLIENT read " + n + " path " + path);
                } catch (Exception e) {
                    System.out.println("CLIENT error " + e.getMessage());
                }
            }
        }
    }

    /** Reads until end of stream or an error; reports how many bytes the application got. */
    private static void sink() throws Exception {
        try (ServerSocketChannel server = ServerSocketChannel.open()) {
            server.bind(new InetSocketAddress("127.0.0.1", 0));
            System.out.println("PORT " + ((InetSocketAddress) server.getLocalAddress()).getPort());
            System.out.flush();
            try (SocketChannel channel = server.accept()) {
                ByteBuffer buffer = ByteBuffer.allocateDirect(1 << 16);
                long total = 0;
                try {
                    for (int n; (n = channel.read(buffer)) >= 0; buffer.clear()) {
                        total += n;
                    }
                    System.out.println("SERVER read " + total + " end of stream");
                } catch (Exception e) {
                    System.out.println("SERVER read " + total + " error " + e.getMessage());
                }
            }
        }
    }

    /** Connects and writes 8 MiB at once, without waiting for the upgrade; then reads. */
    private static void writer(int port) throws Exception {
        try (SocketChannel channel = SocketChannel.open(new InetSocketAddress("127.0.0.1", port))) {
            ByteBuffer data = ByteBuffer.allocateDirect(8 << 20);
            long written = 0;
            try {
                while (data.hasRemaining()) {
                    written += channel.write(data);
                }
                channel.shutdownOutput();
                int n = channel.read(ByteBuffer.allocate(8));
                System.out.println("CLIENT wrote " + written + " read " + n + " path " + path(channel));
            } catch (Exception e) {
                System.out.println("CLIENT wrote " + written + " error " + e.getMessage());
            }
        }
    }

    private static String path(SocketChannel channel) throws Exception {
        return ((HadronioSocketChannel) channel).transportDescription().split("\n")[0];
    }
}
