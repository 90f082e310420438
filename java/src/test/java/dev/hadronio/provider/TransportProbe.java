package dev.hadronio.provider;

import dev.hadronio.HadronioProvider;
import dev.hadronio.nio.HadronioSocketChannel;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;

/**
 * Connects two channels in this JVM, exchanges round trips until both have switched to UCX (the
 * upgrade takes a few) or both stay on TCP for a reason they name (at most 10 s), and prints both
 * paths.
 */
public final class TransportProbe {
    private TransportProbe() {
    }

    public static void main(String[] args) throws Exception {
        HadronioProvider provider = new HadronioProvider();
        try (ServerSocketChannel server = provider.openServerSocketChannel()) {
            server.bind(new InetSocketAddress("127.0.0.1", 0));
            try (SocketChannel client = provider.openSocketChannel()) {
                client.connect(server.getLocalAddress());
                try (SocketChannel accepted = server.accept()) {
                    ByteBuffer buffer = ByteBuffer.allocate(4);
                    long deadline = System.nanoTime() + 10_000_000_000L;
                    HadronioSocketChannel c = (HadronioSocketChannel) client;
                    HadronioSocketChannel a = (HadronioSocketChannel) accepted;
                    while (System.nanoTime() - deadline < 0) {
                        boolean upgraded = c.transportDescription().startsWith("ucx") && a.transportDescription().startsWith("ucx");
                        boolean gaveUp = stays(c) && stays(a);
                        if (upgraded || gaveUp) {
                            break;
                        }
                        buffer.clear();
                        client.write(buffer);
                        buffer.clear();
                        while (buffer.hasRemaining()) {
                            accepted.read(buffer);
                        }
                        buffer.flip();
                        accepted.write(buffer);
                        buffer.clear();
                        while (buffer.hasRemaining()) {
                            client.read(buffer);
                        }
                    }
                    System.out.println("CLIENT " + ((HadronioSocketChannel) client).transportDescription().replace('\n', '|'));
                    System.out.println("SERVER " + ((HadronioSocketChannel) accepted).transportDescription().replace('\n', '|'));
                }
            }
        }
    }

    /** Whether the channel stays on TCP for good (it names why; not one that was not upgraded yet). */
    private static boolean stays(HadronioSocketChannel channel) throws IOException {
        String path = channel.transportDescription();
        return path.startsWith("tcp (") && !path.equals("tcp (not upgraded yet)");
    }
}
