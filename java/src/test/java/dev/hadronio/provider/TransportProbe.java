package dev.hadronio.provider;

import dev.hadronio.HadronioProvider;
import dev.hadronio.nio.HadronioSocketChannel;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;

/**
 * Connects two channels in this JVM, exchanges round trips until both have switched to UCX (the
 * upgrade takes a few; at most 10 s, or 200 round trips when it is switched off) and prints both
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
                    for (int round = 0; System.nanoTime() - deadline < 0; round++) {
                        boolean upgraded = c.transportDescription().startsWith("ucx") && a.transportDescription().startsWith("ucx");
                        if (upgraded || (round >= 200 && "tcp".equals(System.getProperty("hadronio.transport")))) {
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
}
