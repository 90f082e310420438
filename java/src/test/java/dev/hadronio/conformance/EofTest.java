package dev.hadronio.conformance;

import static org.junit.Assert.assertArrayEquals;
import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertFalse;
import static org.junit.Assert.assertNotNull;
import static org.junit.Assert.assertThrows;
import static org.junit.Assert.assertTrue;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.StandardSocketOptions;
import java.nio.ByteBuffer;
import java.nio.channels.AsynchronousCloseException;
import java.nio.channels.ClosedChannelException;
import java.nio.channels.SelectionKey;
import java.nio.channels.Selector;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.util.List;
import java.util.Random;
import java.util.concurrent.TimeUnit;
import org.junit.Test;
import org.junit.runner.RunWith;
import org.junit.runners.Parameterized;
import org.junit.runners.Parameterized.Parameters;

/**
 * Scenario 4: end of stream. A graceful close or {@code shutdownOutput()} delivers every byte written
 * before it and then -1 (repeatedly); half-close leaves the other direction working; writing after one's
 * own {@code shutdownOutput()} fails; {@code shutdownInput()} makes one's own reads return -1.
 */
@RunWith(Parameterized.class)
public class EofTest extends AbstractConformanceTest {

    @Parameters(name = "{0}")
    public static List<Object[]> parameters() {
        return Providers.parameters();
    }

    @Test
    public void closeDeliversAllDataThenEndOfStream() throws Exception {
        byte[] data = randomBytes(11, 1024 * 1024 + 3);
        Pair pair = connectPair();
        Background<Void> writer = background("writer", () -> {
            writeFully(pair.server, ByteBuffer.wrap(data));
            pair.server.close();
            return null;
        });
        byte[] received = readToEnd(pair.client);
        writer.join();
        assertBytesEqual("data before end of stream", data, received);
        assertEndOfStreamRepeatedly(pair);
    }

    /**
     * The writer closes before the reader touched its channel after connecting, so whatever the
     * reader's side sends during the connection's set-up reaches a closed socket: the bytes that socket
     * had not sent yet must still arrive, then end of stream.
     */
    @Test
    public void closeBeforeThePeerReadsDeliversAllData() throws Exception {
        byte[] data = randomBytes(12, 1024 * 1024 + 3);
        ServerSocketChannel server = openServer();
        SocketChannel client = newClient();
        client.configureBlocking(false);
        boolean connected = client.connect(server.getLocalAddress());
        SocketChannel accepted = track(server.accept());
        await("finishConnect()", () -> {
            try {
                return connected || client.finishConnect();
            } catch (IOException e) {
                throw new UncheckedIOException(e);
            }
        });
        Background<Void> writer = background("writer", () -> {
            writeFully(accepted, ByteBuffer.wrap(data));
            accepted.close();
            return null;
        });
        // The kernel may not take all of it before the reader reads; then the close comes later.
        writer.awaitDone(2, TimeUnit.SECONDS);
        client.configureBlocking(true);
        byte[] received = readToEnd(client);
        writer.join();
        assertBytesEqual("data before end of stream", data, received);
    }

    @Test
    public void closeWithoutDataGivesEndOfStream() throws Exception {
        Pair pair = connectPair();
        pair.server.close();
        assertEndOfStreamRepeatedly(pair);
        assertTrue("reading -1 does not close the channel", pair.client.isOpen());
        assertTrue("reading -1 does not disconnect the channel", pair.client.isConnected());
    }

    /**
     * A server that closes each connection as soon as it accepted it (netty closes a child whose
     * handler failed in channelActive): the client reads end of stream, not an error, also when the
     * close comes before anything from the client reached the server.
     */
    @Test
    public void closeRightAfterAcceptGivesEndOfStream() throws Exception {
        ServerSocketChannel server = openServer();
        for (int i = 0; i < 20; i++) {
            SocketChannel client = newClient();
            client.configureBlocking(false);
            boolean connected = client.connect(server.getLocalAddress());
            server.accept().close();
            if (!connected) {
                await("finishConnect()", () -> {
                    try {
                        return client.finishConnect();
                    } catch (IOException e) {
                        throw new UncheckedIOException(e);
                    }
                });
            }
            client.configureBlocking(true);
            ByteBuffer buffer = ByteBuffer.allocate(16);
            assertEquals("round " + i + ": read() after the server closed", -1, client.read(buffer));
            client.close();
        }
    }

    /**
     * A selector loop that reads once per readiness, as netty's does (it stops at a short read):
     * the peer writes a little and closes right away, so its bytes and its end arrive together.
     * The read that returns the bytes is short, and the key must be selected again for the end
     * that waits behind them.
     */
    @Test
    public void shortReadBeforeTheEndIsSelectedAgain() throws Exception {
        ServerSocketChannel server = openServer();
        Selector selector = track(provider.openSelector());
        for (int round = 0; round < 20; round++) {
            int pause = round % 4;
            byte[] data = randomBytes(round, 20);
            Background<Void> peer = background("peer", () -> {
                try (SocketChannel accepted = server.accept()) {
                    // The client's selector waits meanwhile: the bytes and the end come as one event.
                    Thread.sleep(pause);
                    accepted.write(ByteBuffer.wrap(data));
                }
                return null;
            });
            SelectionKey key = connectThrough(selector, server);
            key.interestOps(SelectionKey.OP_READ);
            SocketChannel client = (SocketChannel) key.channel();
            ByteBuffer buffer = ByteBuffer.allocate(1024);
            int n = 0;
            while (n >= 0) {
                selector.selectedKeys().clear();
                assertTrue("round " + round + ": the key is selected again after " + buffer.position() + " bytes",
                        selector.select(10_000) == 1 && key.isReadable());
                n = client.read(buffer);
            }
            peer.join();
            assertArrayEquals("round " + round + ": bytes before the end", data,
                    java.util.Arrays.copyOf(buffer.array(), buffer.position()));
            key.cancel();
            client.close();
        }
    }

    @Test
    public void endOfStreamIntoDirectBufferAndScatteringRead() throws Exception {
        Pair pair = connectPair();
        pair.server.write(ByteBuffer.wrap(new byte[] {1, 2, 3}));
        pair.server.close();
        ByteBuffer direct = ByteBuffer.allocateDirect(10);
        readFully(pair.client, direct.limit(3));
        assertEquals("direct buffer read at end of stream", -1, pair.client.read(direct.limit(10)));
        ByteBuffer[] buffers = {ByteBuffer.allocate(4), ByteBuffer.allocateDirect(4)};
        assertEquals("scattering read at end of stream", -1L, pair.client.read(buffers));
        assertEquals("scattering read at end of stream leaves buffers alone", 0, buffers[0].position());
    }

    @Test
    public void shutdownOutputIsHalfClose() throws Exception {
        byte[] request = randomBytes(12, 300_000);
        byte[] response = randomBytes(13, 200_000);
        Pair pair = connectPair();

        Background<Void> client = background("client-writer", () -> {
            writeFully(pair.client, ByteBuffer.wrap(request));
            pair.client.shutdownOutput();
            return null;
        });
        byte[] serverReceived = readToEnd(pair.server);
        client.join();
        assertBytesEqual("bytes written before shutdownOutput()", request, serverReceived);
        assertEquals("end of stream repeats", -1, pair.server.read(ByteBuffer.allocate(1)));

        assertTrue("output shut down", pair.client.socket().isOutputShutdown());
        assertFalse("input still open", pair.client.socket().isInputShutdown());
        assertTrue("still connected after shutdownOutput()", pair.client.isConnected());
        assertTrue("still open after shutdownOutput()", pair.client.isOpen());

        Background<Void> server = background("server-writer", () -> {
            writeFully(pair.server, ByteBuffer.wrap(response));
            pair.server.close();
            return null;
        });
        byte[] clientReceived = readToEnd(pair.client);
        server.join();
        assertBytesEqual("the side that shut down output still reads", response, clientReceived);
    }

    /**
     * The JDK (11 to 25) throws {@link AsynchronousCloseException}, a subclass of the documented
     * {@link ClosedChannelException}, for a write after {@code shutdownOutput()}; we match it exactly.
     */
    @Test
    public void writeAfterShutdownOutputThrows() throws Exception {
        Pair pair = connectPair();
        pair.client.shutdownOutput();
        assertThrowsExactly(AsynchronousCloseException.class, () -> pair.client.write(ByteBuffer.allocate(10)));
        assertThrowsExactly(AsynchronousCloseException.class,
                () -> pair.client.write(ByteBuffer.allocateDirect(10)));
        assertThrowsExactly(AsynchronousCloseException.class, () -> pair.client.write(ByteBuffer.allocate(0)));
        assertThrowsExactly(AsynchronousCloseException.class,
                () -> pair.client.write(new ByteBuffer[] {ByteBuffer.allocate(1), ByteBuffer.allocate(2)}));
        assertTrue("the channel stays open", pair.client.isOpen());
        pair.client.shutdownOutput();
        assertEquals("peer reads end of stream", -1, pair.server.read(ByteBuffer.allocate(1)));
    }

    @Test
    public void shutdownInputMakesOwnReadsReturnEndOfStream() throws Exception {
        Pair pair = connectPair();
        pair.server.write(ByteBuffer.wrap(new byte[] {1, 2, 3}));
        pair.client.shutdownInput();
        assertTrue("input shut down", pair.client.socket().isInputShutdown());
        assertEquals("read after shutdownInput(), even with data sent", -1, pair.client.read(ByteBuffer.allocate(8)));
        assertEquals("read again", -1, pair.client.read(ByteBuffer.allocateDirect(8)));
        assertEquals("scattering read", -1L, pair.client.read(new ByteBuffer[] {ByteBuffer.allocate(8)}));
        pair.client.shutdownInput();

        byte[] data = randomBytes(14, 1000);
        writeFully(pair.client, ByteBuffer.wrap(data));
        assertBytesEqual("output still works after shutdownInput()", data, readExactly(pair.server, data.length));
    }

    /** A reader blocked in {@code read} when its own side's input is shut down returns -1 at once. */
    @Test
    public void shutdownInputWakesABlockedReader() throws Exception {
        Pair pair = connectPair();
        Background<Integer> reader = background("reader", () -> pair.client.read(ByteBuffer.allocate(8)));
        awaitBlockedIn(reader.thread(), pair.client, "read");
        pair.client.shutdownInput();
        assertEquals("the blocked read ends with end of stream", -1, (int) reader.join());
        pair.server.write(ByteBuffer.wrap(new byte[] {1, 2, 3}));
        assertEquals("later reads too", -1, pair.client.read(ByteBuffer.allocate(8)));
        byte[] data = randomBytes(15, 1000);
        writeFully(pair.client, ByteBuffer.wrap(data));
        assertBytesEqual("output still works", data, readExactly(pair.server, data.length));
    }

    @Test
    public void writeAfterPeerClosedEventuallyFails() throws Exception {
        Pair pair = connectPair();
        pair.server.close();
        assertEquals("end of stream", -1, pair.client.read(ByteBuffer.allocate(1)));
        IOException failure = writeUntilFailure(pair, 1000);
        assertNotNull("writing to a closed peer fails with an IOException", failure);
        assertFalse("the failure is not a ClosedChannelException: " + failure,
                failure instanceof ClosedChannelException);
        assertTrue("the JDK leaves the channel open after that failure", pair.client.isOpen());
    }

    /** {@code SO_LINGER} 0 makes {@code close()} abortive: the peer's read fails instead of returning -1. */
    @Test
    public void abortiveCloseMakesPeerReadFail() throws Exception {
        Pair pair = connectPair();
        pair.server.setOption(StandardSocketOptions.SO_LINGER, 0);
        pair.server.close();
        IOException failure = assertThrows(IOException.class, () -> pair.client.read(ByteBuffer.allocate(10)));
        assertFalse("the failure is not a ClosedChannelException: " + failure,
                failure instanceof ClosedChannelException);
    }

    /**
     * Bytes a peer wrote before closing abortively stay readable, even after a write noticed the
     * reset: the reader gets all of them, then -1 or an {@code IOException}.
     */
    @Test
    public void dataBeforeAbortiveCloseStaysReadable() throws Exception {
        Pair pair = connectPair();
        byte[] sent = new byte[100];
        new Random(7).nextBytes(sent);
        pair.server.setOption(StandardSocketOptions.SO_LINGER, 0);
        pair.server.write(ByteBuffer.wrap(sent));
        pair.server.close();
        Thread.sleep(200);
        assertNotNull("writing to a reset peer fails with an IOException", writeUntilFailure(pair, 100));
        ByteBuffer received = ByteBuffer.allocate(sent.length);
        while (received.hasRemaining()) {
            int n = pair.client.read(received);
            assertTrue("read everything before the end (" + received.position() + " of 100 bytes)", n > 0);
        }
        assertArrayEquals("the bytes written before the close", sent, received.array());
        try {
            assertEquals("after the data: end of stream", -1, pair.client.read(ByteBuffer.allocate(10)));
        } catch (IOException e) {
            assertFalse("after the data: a reset, not " + e, e instanceof ClosedChannelException);
        }
    }

    /**
     * The first write after the peer reset the connection fails, even when the bytes the peer sent
     * before the reset still wait unread, and those bytes stay readable. The client is a
     * non-blocking channel of a selector (as netty's are) that neither selects nor reads until it
     * writes, so with hadroNIO the server's bytes are still ahead of the reset in the TCP stream.
     */
    @Test
    public void firstWriteAfterPeerResetFailsWithItsBytesUnread() throws Exception {
        ServerSocketChannel server = openServer();
        Background<SocketChannel> acceptor = background("accept", () -> track(server.accept()));
        Selector selector = track(provider.openSelector());
        SelectionKey key = connectThrough(selector, server);
        SocketChannel client = (SocketChannel) key.channel();
        SocketChannel accepted = acceptor.join();
        byte[] sent = new byte[100];
        new Random(8).nextBytes(sent);
        accepted.setOption(StandardSocketOptions.SO_LINGER, 0);
        writeFully(accepted, ByteBuffer.wrap(sent));
        accepted.close();
        Thread.sleep(200);
        IOException failure = assertThrows("the first write after the peer's reset fails", IOException.class,
                () -> client.write(ByteBuffer.allocate(100)));
        assertFalse("the failure is not a ClosedChannelException: " + failure,
                failure instanceof ClosedChannelException);
        key.interestOps(SelectionKey.OP_READ);
        ByteBuffer received = ByteBuffer.allocate(sent.length);
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(WAIT_SECONDS);
        while (received.hasRemaining() && System.nanoTime() - deadline < 0) {
            selector.select(100);
            selector.selectedKeys().clear();
            int n = client.read(received);
            assertTrue("read everything before the end (" + received.position() + " of 100 bytes)", n >= 0);
        }
        assertArrayEquals("the bytes written before the reset", sent, received.array());
    }

    /** Writes {@code size} bytes at a time until a write fails (or the wait ends); the failure, or null. */
    private static IOException writeUntilFailure(Pair pair, int size) throws InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(WAIT_SECONDS);
        while (System.nanoTime() - deadline < 0) {
            try {
                pair.client.write(ByteBuffer.allocate(size));
                Thread.sleep(1);
            } catch (IOException e) {
                return e;
            }
        }
        return null;
    }

    private static void assertEndOfStreamRepeatedly(Pair pair) throws IOException {
        for (int i = 0; i < 3; i++) {
            assertEquals("read #" + i + " at end of stream", -1, pair.client.read(ByteBuffer.allocate(16)));
        }
    }
}
