package dev.hadronio.conformance;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertFalse;
import static org.junit.Assert.assertThrows;
import static org.junit.Assert.assertTrue;

import java.io.IOException;
import java.net.ConnectException;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.ClosedChannelException;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.util.List;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.Test;
import org.junit.runner.RunWith;
import org.junit.runners.Parameterized;
import org.junit.runners.Parameterized.Parameters;

/**
 * Scenario 5: connecting to a port nobody listens on throws {@link ConnectException}, and the JDK then
 * closes the channel (blocking {@code connect}, non-blocking {@code finishConnect} and the socket adaptor
 * alike).
 */
@RunWith(Parameterized.class)
public class ConnectRefusedTest extends AbstractConformanceTest {

    @Parameters(name = "{0}")
    public static List<Object[]> parameters() {
        return Providers.parameters();
    }

    /** A loopback address whose port had a listener a moment ago and now has none. */
    private InetSocketAddress refusingAddress() throws Exception {
        ServerSocketChannel server = openServer();
        InetSocketAddress address = (InetSocketAddress) server.getLocalAddress();
        server.close();
        return address;
    }

    @Test
    public void blockingConnectThrowsConnectExceptionAndClosesChannel() throws Exception {
        InetSocketAddress address = refusingAddress();
        SocketChannel client = newClient();
        assertThrowsExactly(ConnectException.class, () -> client.connect(address));
        assertClosedAfterRefusal(client);
    }

    @Test
    public void boundClientRefusedToo() throws Exception {
        InetSocketAddress address = refusingAddress();
        SocketChannel client = newClient();
        client.bind(loopbackAnyPort());
        assertThrowsExactly(ConnectException.class, () -> client.connect(address));
        assertClosedAfterRefusal(client);
    }

    @Test
    public void nonBlockingConnectFailsInFinishConnect() throws Exception {
        InetSocketAddress address = refusingAddress();
        SocketChannel client = newClient();
        client.configureBlocking(false);
        assertFalse("a non-blocking connect() returns false", client.connect(address));
        assertTrue("connection pending", client.isConnectionPending());
        AtomicReference<IOException> failure = new AtomicReference<>();
        await("finishConnect() to fail", () -> {
            try {
                assertFalse("finishConnect() succeeded to a refusing port", client.finishConnect());
                return false;
            } catch (IOException e) {
                failure.set(e);
                return true;
            }
        });
        assertEquals("exactly ConnectException: " + failure.get(), ConnectException.class, failure.get().getClass());
        assertClosedAfterRefusal(client);
    }

    @Test
    public void socketAdaptorConnectThrowsConnectException() throws Exception {
        InetSocketAddress address = refusingAddress();
        SocketChannel client = newClient();
        assertThrowsExactly(ConnectException.class, () -> client.socket().connect(address, 10_000));
        assertFalse("channel closed after a refused socket().connect()", client.isOpen());
        assertTrue("socket adaptor reports closed", client.socket().isClosed());
    }

    private static void assertClosedAfterRefusal(SocketChannel client) {
        assertFalse("the JDK closes the channel after a refused connect", client.isOpen());
        assertFalse("not connected", client.isConnected());
        assertFalse("no connection pending", client.isConnectionPending());
        assertThrows(ClosedChannelException.class, client::getLocalAddress);
        assertThrows(ClosedChannelException.class, () -> client.read(ByteBuffer.allocate(1)));
    }
}
