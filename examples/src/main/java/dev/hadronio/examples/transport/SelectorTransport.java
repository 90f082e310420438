package dev.hadronio.examples.transport;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.SelectionKey;
import java.nio.channels.Selector;
import java.nio.channels.SocketChannel;

/**
 * A non-blocking {@link SocketChannel} driven by Selectors the way event-loop applications do: wait in
 * {@code select()} for OP_READ, then read; write, and wait for OP_WRITE only when the socket is full. Each
 * direction has its own Selector, so a reader thread and a writer thread can work at the same time (a channel may
 * be registered with several selectors).
 */
final class SelectorTransport extends ChannelTransport {

    private final Selector readSelector;
    private final Selector writeSelector;

    SelectorTransport(SocketChannel channel) throws IOException {
        super(channel);
        channel.configureBlocking(false);
        readSelector = Selector.open();
        writeSelector = Selector.open();
        channel.register(readSelector, SelectionKey.OP_READ);
        channel.register(writeSelector, SelectionKey.OP_WRITE);
    }

    @Override
    protected void writeFully(ByteBuffer buffer) throws IOException {
        while (buffer.hasRemaining()) {
            if (channel.write(buffer) == 0) {
                writeSelector.select();
                writeSelector.selectedKeys().clear();
            }
        }
    }

    @Override
    protected int readSome(ByteBuffer buffer) throws IOException {
        int n;
        do {
            readSelector.select();
            readSelector.selectedKeys().clear();
            n = checkedCount(channel.read(buffer), buffer);
        } while (n == 0);
        return n;
    }

    @Override
    public void close() throws IOException {
        try {
            readSelector.close();
            writeSelector.close();
        } finally {
            super.close();
        }
    }
}
