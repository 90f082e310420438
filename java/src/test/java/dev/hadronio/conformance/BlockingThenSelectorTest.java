package dev.hadronio.conformance;

import static org.junit.Assert.assertArrayEquals;
import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertTrue;

import java.io.InputStream;
import java.nio.ByteBuffer;
import java.nio.channels.SelectionKey;
import java.nio.channels.Selector;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.nio.channels.spi.SelectorProvider;
import java.util.List;
import org.junit.Test;
import org.junit.runner.RunWith;
import org.junit.runners.Parameterized;
import org.junit.runners.Parameterized.Parameters;

/**
 * A channel that read in blocking mode for a while and is then used another way sees every byte
 * its peer sent: registered with a selector, it is selected for the bytes that came before the
 * registration and for those after (and only when a byte is there); back in blocking mode, a read
 * with a timeout ({@code SO_TIMEOUT}) returns the byte that is there. The peer is a plain TCP
 * channel of the JDK's provider, so that with hadroNIO the connection stays on TCP: an accepted
 * channel's blocking reads wait in the kernel, as the JDK's do, and a connected one's first reads
 * look for the answer to its offer.
 */
@RunWith(Parameterized.class)
public class BlockingThenSelectorTest extends AbstractConformanceTest {

    @Parameters(name = "{0}")
    public static List<Object[]> parameters() {
        return Providers.parameters();
    }

    @Test
    public void bytesReachAConnectedChannelThatReadInBlockingModeBefore() throws Exception {
        ServerSocketChannel server = track(SelectorProvider.provider().openServerSocketChannel());
        server.bind(loopbackAnyPort());
        Background<SocketChannel> acceptor = background("accept", () -> track(server.accept()));
        SocketChannel client = newClient();
        assertTrue("blocking connect() returns true", client.connect(server.getLocalAddress()));
        expectEveryByte(client, acceptor.join());
    }

    @Test
    public void bytesReachAnAcceptedChannelThatReadInBlockingModeBefore() throws Exception {
        ServerSocketChannel server = openServer();
        Background<SocketChannel> acceptor = background("accept", () -> track(server.accept()));
        SocketChannel client = track(SelectorProvider.provider().openSocketChannel());
        assertTrue("blocking connect() returns true", client.connect(server.getLocalAddress()));
        expectEveryByte(acceptor.join(), client);
    }

    /** {@code channel}, of the provider under test, sees every byte {@code peer} sends. */
    private void expectEveryByte(SocketChannel channel, SocketChannel peer) throws Exception {
        for (byte round = 0; round < 3; round++) {
            writeFully(channel, ByteBuffer.wrap(new byte[] {round}));
            assertArrayEquals("request " + round, new byte[] {round}, readExactly(peer, 1));
            writeFully(peer, ByteBuffer.wrap(new byte[] {(byte) (round + 10)}));
            assertArrayEquals("reply " + round, new byte[] {(byte) (round + 10)}, readExactly(channel, 1));
        }
        // A read that waits for its byte.
        writeLater(peer, 'a');
        assertArrayEquals(new byte[] {'a'}, readExactly(channel, 1));

        writeFully(peer, ByteBuffer.wrap(new byte[] {'b'}));
        Selector selector = track(provider.openSelector());
        channel.configureBlocking(false);
        SelectionKey key = channel.register(selector, SelectionKey.OP_READ);
        assertEquals("the byte sent before the registration", 'b', selectAndRead(selector, key, channel));
        writeLater(peer, 'c');
        assertEquals("the byte sent after the registration", 'c', selectAndRead(selector, key, channel));

        key.cancel();
        selector.selectNow();
        channel.configureBlocking(true);
        writeLater(peer, 'd');
        assertArrayEquals(new byte[] {'d'}, readExactly(channel, 1));
        writeFully(peer, ByteBuffer.wrap(new byte[] {'e'}));
        channel.socket().setSoTimeout((int) (WAIT_SECONDS * 1000));
        InputStream in = channel.socket().getInputStream();
        assertEquals("a read with a timeout", 'e', in.read());
    }

    /** Writes {@code b} to {@code channel} from a helper thread after a short while. */
    private void writeLater(SocketChannel channel, char b) {
        background("write-" + b, () -> {
            Thread.sleep(100);
            writeFully(channel, ByteBuffer.wrap(new byte[] {(byte) b}));
            return null;
        });
    }

    /** Selects once: {@code key} must come out selected for reading, with one byte to read, which is returned. */
    private static int selectAndRead(Selector selector, SelectionKey key, SocketChannel channel) throws Exception {
        assertTrue("selected within " + WAIT_SECONDS + " s", selector.select(WAIT_SECONDS * 1000) > 0);
        assertTrue("selected for reading", selector.selectedKeys().remove(key) && key.isReadable());
        ByteBuffer buffer = ByteBuffer.allocate(4);
        assertEquals("the channel selected for reading has a byte", 1, channel.read(buffer));
        return buffer.get(0);
    }
}
