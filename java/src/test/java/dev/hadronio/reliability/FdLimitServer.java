package dev.hadronio.reliability;

import java.io.IOException;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.channels.SelectionKey;
import java.nio.channels.Selector;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.nio.file.Paths;
import java.util.Iterator;

/**
 * A selector echo server written as applications usually are, for {@link FdLimitTest}: it accepts
 * while {@code accept()} returns channels and, when accepting fails (at the file descriptor limit),
 * counts the failure and goes on serving the channels it has. It uses the JVM-wide provider.
 *
 * <pre>
 * FdLimitServer                  listen on 127.0.0.1 (backlog 4096), port chosen by the system
 * </pre>
 *
 * Prints {@code PORT <port>} once listening, then every 500 ms
 * {@code STATS open=<n> accepted=<n> closed=<n> acceptFailures=<n> lastFailure=<exception>}.
 */
public final class FdLimitServer {
    private FdLimitServer() {
    }

    public static void main(String[] args) throws IOException {
        // The JDK's channel classes open a descriptor of their own when first used; use them once
        // now, as any server has by the time it reaches its limit.
        try (FileChannel file = FileChannel.open(Paths.get("/proc/self/stat"))) {
            file.read(ByteBuffer.allocate(64));
        }
        Selector selector = Selector.open();
        ServerSocketChannel server = ServerSocketChannel.open();
        server.bind(new InetSocketAddress("127.0.0.1", 0), 4096);
        server.configureBlocking(false);
        server.register(selector, SelectionKey.OP_ACCEPT);
        System.out.println("PORT " + ((InetSocketAddress) server.getLocalAddress()).getPort());
        System.out.flush();
        ByteBuffer buffer = ByteBuffer.allocateDirect(4096);
        long open = 0;
        long accepted = 0;
        long closed = 0;
        long failures = 0;
        String lastFailure = "none";
        long nextStats = System.nanoTime();
        while (true) {
            selector.select(100);
            Iterator<SelectionKey> keys = selector.selectedKeys().iterator();
            while (keys.hasNext()) {
                SelectionKey key = keys.next();
                keys.remove();
                if (!key.isValid()) {
                    continue;
                }
                if (key.isAcceptable()) {
                    try {
                        SocketChannel channel;
                        while ((channel = server.accept()) != null) {
                            channel.configureBlocking(false);
                            channel.register(selector, SelectionKey.OP_READ);
                            open++;
                            accepted++;
                        }
                    } catch (IOException e) {
                        failures++;
                        lastFailure = e.toString().replace(' ', '_');
                        if (!String.valueOf(e.getMessage()).contains("Too many open files")) {
                            System.out.println("accept failed: " + e);
                        }
                    }
                } else if (key.isReadable()) {
                    SocketChannel channel = (SocketChannel) key.channel();
                    buffer.clear();
                    int n;
                    try {
                        n = channel.read(buffer);
                    } catch (IOException e) {
                        // Worth a line: a client that is still there would see this close as a reset.
                        System.out.println("read failed: " + e);
                        n = -1;
                    }
                    if (n < 0) {
                        key.cancel();
                        channel.close();
                        open--;
                        closed++;
                    } else if (n > 0) {
                        buffer.flip();
                        channel.write(buffer);
                    }
                }
            }
            if (System.nanoTime() - nextStats >= 0) {
                nextStats = System.nanoTime() + 500_000_000L;
                System.out.println("STATS open=" + open + " accepted=" + accepted + " closed=" + closed
                        + " acceptFailures=" + failures + " lastFailure=" + lastFailure);
                System.out.flush();
            }
        }
    }
}
