package dev.hadronio.consumer;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.nio.channels.spi.SelectorProvider;
import java.nio.charset.StandardCharsets;

/**
 * A plain java.nio program: a server thread and a client exchange one line each over loopback. It knows nothing
 * of hadroNIO; the build selects the provider with a JVM property. {@code DISABLE_HADRONIO=true} runs it on the
 * JDK's provider.
 */
public final class HelloExchange {

    private static final String PROVIDER_PROPERTY = "java.nio.channels.spi.SelectorProvider";

    private HelloExchange() {
    }

    public static void main(String[] args) throws Exception {
        if ("true".equalsIgnoreCase(System.getenv("DISABLE_HADRONIO"))) {
            System.clearProperty(PROVIDER_PROPERTY);
        }
        System.out.println("SelectorProvider: " + SelectorProvider.provider().getClass().getName());
        try (ServerSocketChannel server = ServerSocketChannel.open()) {
            server.bind(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0));
            Thread answering = new Thread(() -> answer(server), "server");
            answering.start();
            try (SocketChannel client = SocketChannel.open(server.getLocalAddress())) {
                writeLine(client, "Hello from the client");
                System.out.println("Client received: " + readLine(client));
            }
            answering.join();
        }
        System.out.println("Hello exchange done.");
    }

    private static void answer(ServerSocketChannel server) {
        try (SocketChannel connection = server.accept()) {
            String line = readLine(connection);
            System.out.println("Server received: " + line);
            writeLine(connection, "Hello from the server");
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    private static void writeLine(SocketChannel channel, String line) throws IOException {
        ByteBuffer buffer = ByteBuffer.wrap((line + "\n").getBytes(StandardCharsets.UTF_8));
        while (buffer.hasRemaining()) {
            channel.write(buffer);
        }
    }

    private static String readLine(SocketChannel channel) throws IOException {
        ByteBuffer one = ByteBuffer.allocate(1);
        ByteArrayOutputStream line = new ByteArrayOutputStream();
        while (true) {
            one.clear();
            if (channel.read(one) < 0) {
                throw new IOException("connection closed before the end of the line");
            }
            byte b = one.get(0);
            if (b == '\n') {
                return new String(line.toByteArray(), StandardCharsets.UTF_8);
            }
            line.write(b);
        }
    }
}
