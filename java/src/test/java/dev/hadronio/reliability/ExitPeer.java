package dev.hadronio.reliability;

import dev.hadronio.nio.HadronioSocketChannel;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.SelectionKey;
import java.nio.channels.Selector;
import java.nio.channels.SocketChannel;

/**
 * A client that writes a known stream and ends its JVM without closing the connection, for
 * {@link ExitTest}.
 *
 * <pre>
 * ExitPeer &lt;host&gt; &lt;port&gt; &lt;bytes&gt; &lt;blocking|selector&gt; &lt;exit|return&gt;
 * </pre>
 *
 * Writes {@code bytes} bytes of {@link ExitTest#pattern} (blocking writes, or non-blocking ones
 * driven by a selector; on hadroNIO, after the first MiB, once the connection runs over UCX),
 * prints {@code PATH <transport>} (the channel's path, {@code jdk} on the JDK's provider) and
 * {@code WRITTEN <bytes>}, then calls {@code System.exit(0)} or returns from {@code main}, the
 * channel still open.
 */
public final class ExitPeer {
    private ExitPeer() {
    }

    public static void main(String[] args) throws Exception {
        long total = Long.parseLong(args[2]);
        boolean selector = args[3].equals("selector");
        SocketChannel channel = SocketChannel.open(new InetSocketAddress(args[0], Integer.parseInt(args[1])));
        ByteBuffer buffer = ByteBuffer.allocateDirect(256 * 1024);
        Selector writable = null;
        if (selector) {
            channel.configureBlocking(false);
            writable = Selector.open();
            channel.register(writable, SelectionKey.OP_WRITE);
        }
        long written = 0;
        int chunk = 0;
        boolean waited = !(channel instanceof HadronioSocketChannel);
        while (written < total) {
            if (!waited && written >= (1 << 20)) {
                // The rest goes over UCX. The upgrade's probe round trip makes progress while the
                // application uses the connection: a selector selects, a blocking client looks
                // for input without waiting (the reader sends nothing).
                waited = true;
                ByteBuffer nothing = ByteBuffer.allocate(1);
                if (!selector) {
                    channel.configureBlocking(false);
                }
                long deadline = System.nanoTime() + 10_000_000_000L;
                while (!((HadronioSocketChannel) channel).transportDescription().startsWith("ucx")
                        && System.nanoTime() < deadline) {
                    if (selector) {
                        writable.select(1);
                        writable.selectedKeys().clear();
                    } else {
                        channel.read(nothing);
                        Thread.sleep(1);
                    }
                }
                if (!selector) {
                    channel.configureBlocking(true);
                }
            }
            // Pieces of varying length: small ones go through staging, large ones straight.
            int length = (int) Math.min(total - written, 1 + (chunk++ * 7919) % buffer.capacity());
            buffer.clear().limit(length);
            ExitTest.pattern(buffer, written);
            buffer.flip();
            while (buffer.hasRemaining()) {
                int n = channel.write(buffer);
                if (n == 0 && selector) {
                    writable.select(1000);
                    writable.selectedKeys().clear();
                }
            }
            written += length;
        }
        String path = channel instanceof HadronioSocketChannel ? ((HadronioSocketChannel) channel).transportDescription() : "jdk";
        System.out.println("PATH " + path);
        System.out.println("WRITTEN " + written);
        System.out.flush();
        if (args[4].equals("exit")) {
            System.exit(0);
        }
    }
}
