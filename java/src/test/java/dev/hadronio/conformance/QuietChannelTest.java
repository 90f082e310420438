package dev.hadronio.conformance;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertTrue;

import java.nio.ByteBuffer;
import java.nio.channels.SelectionKey;
import java.nio.channels.Selector;
import java.nio.channels.SocketChannel;
import java.util.List;
import org.junit.Test;
import org.junit.runner.RunWith;
import org.junit.runners.Parameterized;
import org.junit.runners.Parameterized.Parameters;

/**
 * A channel whose peer has sent nothing is not selected for reading: an accepted channel and a
 * connected one, each registered for OP_READ before any byte came its way, stay unselected until
 * their peer writes, and are selected then with the bytes to read. (An application that reads a
 * channel reported readable and finds nothing goes back to its selector for nothing: an HTTP server
 * that accepts a connection per request would do so for most of them.)
 */
@RunWith(Parameterized.class)
public class QuietChannelTest extends AbstractConformanceTest {

    /** How long a select waits to see that nothing is reported. */
    static final long QUIET_MILLIS = 200;

    @Parameters(name = "{0}")
    public static List<Object[]> parameters() {
        return Providers.parameters();
    }

    @Test
    public void acceptedChannelIsNotReadableBeforeItsPeerWrites() throws Exception {
        Pair pair = connectPair();
        expectQuietThenBytes(pair.server, pair.client, "accepted");
    }

    @Test
    public void connectedChannelIsNotReadableBeforeItsPeerWrites() throws Exception {
        Pair pair = connectPair();
        expectQuietThenBytes(pair.client, pair.server, "connected");
    }

    private void expectQuietThenBytes(SocketChannel watched, SocketChannel peer, String what) throws Exception {
        Selector selector = track(provider.openSelector());
        watched.configureBlocking(false);
        SelectionKey key = watched.register(selector, SelectionKey.OP_READ);
        assertEquals("selectNow on the " + what + " channel before its peer wrote", 0, selector.selectNow());
        assertEquals("select(" + QUIET_MILLIS + ") on the " + what + " channel before its peer wrote",
                0, selector.select(QUIET_MILLIS));
        assertTrue("nothing selected", selector.selectedKeys().isEmpty());

        writeFully(peer, ByteBuffer.wrap(new byte[] {7, 8, 9}));
        ByteBuffer buffer = ByteBuffer.allocate(16);
        long deadline = System.nanoTime() + WAIT_SECONDS * 1_000_000_000L;
        while (buffer.position() < 3) {
            assertTrue("the " + what + " channel selected within " + WAIT_SECONDS + " s of its peer's bytes",
                    System.nanoTime() < deadline);
            if (selector.select(1000) == 0) {
                continue;
            }
            assertTrue("the " + what + " channel's key selected", selector.selectedKeys().remove(key));
            assertTrue("reported readable", key.isReadable());
            assertTrue("a channel reported readable has bytes for its first read", watched.read(buffer) > 0);
        }
        assertEquals("the peer's bytes", ByteBuffer.wrap(new byte[] {7, 8, 9}), buffer.flip());
    }
}
