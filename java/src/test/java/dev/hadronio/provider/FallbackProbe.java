package dev.hadronio.provider;

import dev.hadronio.reliability.ChildJvm;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.SelectionKey;
import java.nio.channels.Selector;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.nio.channels.spi.SelectorProvider;

/**
 * A child program run with {@code -Djava.nio.channels.spi.SelectorProvider=dev.hadronio.HadronioProvider}:
 * an application's first channel work (a selector accepting, a blocking client, 64 KiB echoed back,
 * then small round trips while the upgrade is still under way, at most 10 s),
 * then {@code PATH <the client's path>}, {@code PROVIDER <class of the channels' provider>} and {@code ACTIVE <hadroNIO runs>} and
 * {@code OK}. Whatever fails is printed and the exit status is 1.
 */
public final class FallbackProbe {
    private FallbackProbe() {
    }

    public static void main(String[] args) {
        ChildJvm.runMain(FallbackProbe::run);
    }

    private static void run() throws Exception {
        try (Selector selector = Selector.open();
                ServerSocketChannel server = ServerSocketChannel.open();
                SocketChannel client = SocketChannel.open()) {
            server.bind(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0));
            server.configureBlocking(false);
            server.register(selector, SelectionKey.OP_ACCEPT);
            client.connect(server.getLocalAddress());
            byte[] data = new byte[64 * 1024];
            for (int i = 0; i < data.length; i++) {
                data[i] = (byte) (i * 31 + 7);
            }
            echo(selector, client, data);
            // The upgrade goes on while the first bytes flow over TCP (a lane's UCX worker may still
            // be in the making): a few more round trips until it is through.
            long upgradeDeadline = System.nanoTime() + 10_000_000_000L;
            while (dev.hadronio.HadronioProvider.transportOf(client).startsWith("tcp (not upgraded yet)")
                    && System.nanoTime() < upgradeDeadline) {
                echo(selector, client, new byte[] {1, 2, 3});
            }
            System.out.println("PATH " + dev.hadronio.HadronioProvider.transportOf(client));
            SelectorProvider provider = client.provider();
            System.out.println("PROVIDER " + provider.getClass().getName());
            SelectorProvider configured = SelectorProvider.provider();
            boolean active = configured instanceof dev.hadronio.HadronioProvider
                    && ((dev.hadronio.HadronioProvider) configured).isActive();
            System.out.println("ACTIVE " + active);
            System.out.println("OK");
        }
    }

    /** Writes {@code data} on {@code client} and serves the selector until the echo is back. */
    private static void echo(Selector selector, SocketChannel client, byte[] data) throws Exception {
        ByteBuffer out = ByteBuffer.wrap(data);
        while (out.hasRemaining()) {
            client.write(out);
        }
        ByteBuffer echoed = ByteBuffer.allocate(data.length);
        client.configureBlocking(false);
        long deadline = System.nanoTime() + 30_000_000_000L;
        while (echoed.hasRemaining()) {
            if (System.nanoTime() > deadline) {
                throw new AssertionError("no echo within 30 s: " + echoed.position() + " bytes back");
            }
            selector.select(100);
            for (SelectionKey key : selector.selectedKeys()) {
                if (key.isAcceptable()) {
                    SocketChannel accepted = ((ServerSocketChannel) key.channel()).accept();
                    if (accepted != null) {
                        accepted.configureBlocking(false);
                        accepted.register(selector, SelectionKey.OP_READ, ByteBuffer.allocate(8192));
                    }
                } else if (key.isReadable()) {
                    SocketChannel channel = (SocketChannel) key.channel();
                    ByteBuffer buffer = (ByteBuffer) key.attachment();
                    if (channel.read(buffer) > 0) {
                        buffer.flip();
                        while (buffer.hasRemaining()) {
                            channel.write(buffer);
                        }
                        buffer.clear();
                    }
                }
            }
            selector.selectedKeys().clear();
            client.read(echoed);
        }
        if (!java.util.Arrays.equals(data, echoed.array())) {
            throw new AssertionError("the echo differs from what was written");
        }
    }
}
