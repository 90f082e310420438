package dev.hadronio.examples.apps;

import java.io.IOException;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.SocketChannel;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;

/**
 * A full-duplex stream through an echo server: per connection, one client thread writes 64 KiB
 * blocks while another reads the echo back; the server echoes with a blocking thread per
 * connection. The figure is the rate at which echoed bytes come back.
 */
@SuppressWarnings("try") // close() of these resources may throw InterruptedException: callers let it through
final class StreamApp implements App {
    static final int BLOCK = 64 * 1024;

    @Override
    public String name() {
        return "stream";
    }

    @Override
    public String request() {
        return "64 KiB blocks through an echo server";
    }

    @Override
    public boolean requests() {
        return false;
    }

    @Override
    public Server serve(InetSocketAddress address) throws IOException {
        return EchoServer.start(address, 64, BLOCK, task -> {
            Thread thread = new Thread(task, "stream-echo");
            thread.setDaemon(true);
            thread.start();
        });
    }

    @Override
    public Client connect(InetSocketAddress address) {
        throw new UnsupportedOperationException("the stream app has no requests");
    }

    /** Streams through {@code connections} connections; bytes echoed back are counted in {@code received}. */
    static List<AutoCloseable> start(InetSocketAddress address, int connections, AtomicLong received) throws IOException {
        List<AutoCloseable> open = new ArrayList<>();
        for (int i = 0; i < connections; i++) {
            SocketChannel channel = SocketChannel.open(address);
            open.add(channel);
            Thread writer = new Thread(() -> {
                ByteBuffer block = ByteBuffer.allocateDirect(BLOCK);
                try {
                    while (true) {
                        block.clear();
                        while (block.hasRemaining()) {
                            channel.write(block);
                        }
                    }
                } catch (IOException e) {
                    // closed at the end
                }
            }, "stream-writer");
            Thread reader = new Thread(() -> {
                ByteBuffer block = ByteBuffer.allocateDirect(BLOCK);
                try {
                    while (true) {
                        block.clear();
                        int n = channel.read(block);
                        if (n < 0) {
                            return;
                        }
                        received.addAndGet(n);
                    }
                } catch (IOException e) {
                    // closed at the end
                }
            }, "stream-reader");
            writer.setDaemon(true);
            reader.setDaemon(true);
            writer.start();
            reader.start();
        }
        return open;
    }
}
