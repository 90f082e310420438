package dev.hadronio.reliability;

import java.io.IOException;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.SocketChannel;

/**
 * A client for {@link SharedMemoryLayoutTest}: {@code LargeEchoClient PORT MESSAGES} connects to an
 * echo server on 127.0.0.1, writes MESSAGES messages of 1 MiB (patterned) from one thread, reads
 * the echo on another and compares every byte; prints {@code DONE <bytes> <path>} or
 * {@code FAILED <exception>}.
 */
public final class LargeEchoClient {
    static final int MESSAGE = 1 << 20;

    private LargeEchoClient() {
    }

    static byte pattern(long i) {
        return (byte) (i * 31 + (i >>> 20));
    }

    public static void main(String[] args) throws Exception {
        LinkPeer.exitWithParent();
        int port = Integer.parseInt(args[0]);
        int messages = Integer.parseInt(args[1]);
        long total = (long) messages * MESSAGE;
        try (SocketChannel channel = SocketChannel.open(new InetSocketAddress("127.0.0.1", port))) {
            Thread writer = new Thread(() -> {
                ByteBuffer out = ByteBuffer.allocateDirect(MESSAGE);
                try {
                    for (long at = 0; at < total; ) {
                        out.clear();
                        for (int i = 0; i < MESSAGE; i++) {
                            out.put(pattern(at + i));
                        }
                        out.flip();
                        while (out.hasRemaining()) {
                            channel.write(out);
                        }
                        at += MESSAGE;
                    }
                } catch (IOException e) {
                    LinkPeer.say("FAILED writing: " + e);
                }
            }, "writer");
            writer.start();
            ByteBuffer in = ByteBuffer.allocate(MESSAGE);
            long got = 0;
            while (got < total) {
                in.clear();
                int n = channel.read(in);
                if (n < 0) {
                    throw new IOException("end of stream after " + got + " of " + total + " bytes");
                }
                for (int i = 0; i < n; i++) {
                    if (in.get(i) != pattern(got + i)) {
                        throw new IOException("byte " + (got + i) + " differs");
                    }
                }
                got += n;
            }
            writer.join();
            LinkPeer.say("DONE " + got + " " + LinkPeer.path(channel));
        } catch (Exception e) {
            LinkPeer.say("FAILED " + e);
        }
    }
}
