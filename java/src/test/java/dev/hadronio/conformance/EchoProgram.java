package dev.hadronio.conformance;

import java.io.IOException;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.nio.channels.spi.SelectorProvider;
import java.util.Random;
import java.util.concurrent.atomic.AtomicReference;
import java.util.zip.CRC32;

/**
 * A stand-alone echo server and client for {@link TwoJvmEchoTest}. It opens channels only through
 * {@code SocketChannel.open()} and {@code ServerSocketChannel.open()}, i.e. the JVM-wide provider chosen by
 * {@code -Djava.nio.channels.spi.SelectorProvider}, exactly as an unmodified application does.
 *
 * <pre>
 * EchoProgram server &lt;port&gt;                 bind 127.0.0.1:port (0: ephemeral), echo one connection
 * EchoProgram client &lt;host&gt; &lt;port&gt; &lt;bytes&gt;  send seeded random bytes, read the echo
 * </pre>
 *
 * Output lines (stdout): {@code PROVIDER <class>}, {@code CHANNEL_PROVIDER <class>}; the server prints
 * {@code PORT <port>} once listening and {@code ECHOED <bytes> <crc32>} at the end; the client prints
 * {@code SENT <bytes> <crc32>} and {@code RECEIVED <bytes> <crc32>}. Exit status 0 on success.
 */
public final class EchoProgram {

    private static final int BUFFER_SIZE = 64 * 1024;

    private EchoProgram() {
    }

    public static void main(String[] args) throws Exception {
        if (args.length == 2 && args[0].equals("server")) {
            server(Integer.parseInt(args[1]));
        } else if (args.length == 4 && args[0].equals("client")) {
            System.exit(client(args[1], Integer.parseInt(args[2]), Long.parseLong(args[3])) ? 0 : 1);
        } else {
            System.err.println("usage: EchoProgram server <port> | client <host> <port> <bytes>");
            System.exit(2);
        }
    }

    private static void printProviders(Object channelProvider) {
        System.out.println("PROVIDER " + SelectorProvider.provider().getClass().getName());
        System.out.println("CHANNEL_PROVIDER " + channelProvider.getClass().getName());
    }

    private static void server(int port) throws IOException {
        try (ServerSocketChannel server = ServerSocketChannel.open()) {
            printProviders(server.provider());
            server.bind(new InetSocketAddress("127.0.0.1", port));
            System.out.println("PORT " + ((InetSocketAddress) server.getLocalAddress()).getPort());
            System.out.flush();
            try (SocketChannel channel = server.accept()) {
                ByteBuffer buffer = ByteBuffer.allocateDirect(BUFFER_SIZE);
                byte[] bytes = new byte[BUFFER_SIZE];
                CRC32 crc = new CRC32();
                long total = 0;
                while (channel.read(buffer) >= 0) {
                    buffer.flip();
                    int n = buffer.remaining();
                    buffer.get(bytes, 0, n);
                    crc.update(bytes, 0, n);
                    total += n;
                    buffer.flip();
                    while (buffer.hasRemaining()) {
                        channel.write(buffer);
                    }
                    buffer.clear();
                }
                channel.shutdownOutput();
                System.out.println("ECHOED " + total + " " + crc.getValue());
            }
        }
    }

    private static boolean client(String host, int port, long size) throws Exception {
        try (SocketChannel channel = SocketChannel.open()) {
            printProviders(channel.provider());
            channel.connect(new InetSocketAddress(host, port));
            CRC32 sent = new CRC32();
            AtomicReference<Throwable> writeFailure = new AtomicReference<>();
            Thread writer = new Thread(() -> {
                try {
                    Random random = new Random(size);
                    byte[] bytes = new byte[BUFFER_SIZE];
                    ByteBuffer buffer = ByteBuffer.allocate(BUFFER_SIZE);
                    for (long remaining = size; remaining > 0; ) {
                        int n = (int) Math.min(BUFFER_SIZE, remaining);
                        random.nextBytes(bytes);
                        sent.update(bytes, 0, n);
                        buffer.clear();
                        buffer.put(bytes, 0, n).flip();
                        while (buffer.hasRemaining()) {
                            channel.write(buffer);
                        }
                        remaining -= n;
                    }
                    channel.shutdownOutput();
                } catch (Throwable t) {
                    writeFailure.set(t);
                }
            }, "echo-client-writer");
            writer.start();

            CRC32 received = new CRC32();
            long total = 0;
            ByteBuffer buffer = ByteBuffer.allocate(BUFFER_SIZE);
            int n;
            while ((n = channel.read(buffer)) >= 0) {
                received.update(buffer.array(), 0, n);
                total += n;
                buffer.clear();
            }
            writer.join();
            if (writeFailure.get() != null) {
                throw new IOException("writer failed", writeFailure.get());
            }
            System.out.println("SENT " + size + " " + sent.getValue());
            System.out.println("RECEIVED " + total + " " + received.getValue());
            return total == size && sent.getValue() == received.getValue();
        }
    }
}
