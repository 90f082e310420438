package dev.hadronio.examples.transport;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.SocketChannel;

/** A blocking {@link SocketChannel}: every read and write blocks the calling thread. */
final class BlockingTransport extends ChannelTransport {

    BlockingTransport(SocketChannel channel) throws IOException {
        super(channel);
        channel.configureBlocking(true);
    }

    @Override
    protected void writeFully(ByteBuffer buffer) throws IOException {
        while (buffer.hasRemaining()) {
            channel.write(buffer);
        }
    }

    @Override
    protected int readSome(ByteBuffer buffer) throws IOException {
        int n;
        do {
            n = checkedCount(channel.read(buffer), buffer);
        } while (n == 0);
        return n;
    }
}
