package dev.hadronio.conformance;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertFalse;
import static org.junit.Assert.assertThrows;
import static org.junit.Assert.assertTrue;

import java.net.InetSocketAddress;
import java.net.SocketAddress;
import java.net.StandardSocketOptions;
import java.nio.ByteBuffer;
import java.nio.channels.AlreadyBoundException;
import java.nio.channels.AlreadyConnectedException;
import java.nio.channels.CancelledKeyException;
import java.nio.channels.ClosedChannelException;
import java.nio.channels.ClosedSelectorException;
import java.nio.channels.ConnectionPendingException;
import java.nio.channels.IllegalBlockingModeException;
import java.nio.channels.NoConnectionPendingException;
import java.nio.channels.NotYetBoundException;
import java.nio.channels.NotYetConnectedException;
import java.nio.channels.SelectionKey;
import java.nio.channels.Selector;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.nio.channels.UnresolvedAddressException;
import java.nio.channels.UnsupportedAddressTypeException;
import java.util.List;
import org.junit.Test;
import org.junit.runner.RunWith;
import org.junit.runners.Parameterized;
import org.junit.runners.Parameterized.Parameters;

/**
 * Scenario 11: misuse throws exactly the exception class the JDK throws. Where JDK versions differ (a few
 * operations on a closed channel throw {@code AsynchronousCloseException} on JDK 17 and
 * {@code ClosedChannelException} on JDK 25) the test accepts any {@link ClosedChannelException}.
 */
@RunWith(Parameterized.class)
public class MisuseExceptionsTest extends AbstractConformanceTest {

    @Parameters(name = "{0}")
    public static List<Object[]> parameters() {
        return Providers.parameters();
    }

    /** An address type no socket provider supports. */
    static final class OtherAddress extends SocketAddress {
        private static final long serialVersionUID = 1L;
    }

    @Test
    public void ioBeforeConnectThrowsNotYetConnected() throws Exception {
        for (boolean blocking : new boolean[] {true, false}) {
            SocketChannel client = newClient();
            client.configureBlocking(blocking);
            assertThrowsExactly(NotYetConnectedException.class, () -> client.read(ByteBuffer.allocate(1)));
            assertThrowsExactly(NotYetConnectedException.class, () -> client.write(ByteBuffer.allocate(1)));
            assertThrowsExactly(NotYetConnectedException.class,
                    () -> client.read(new ByteBuffer[] {ByteBuffer.allocateDirect(1)}));
            assertThrowsExactly(NotYetConnectedException.class,
                    () -> client.write(new ByteBuffer[] {ByteBuffer.allocateDirect(1)}, 0, 1));
            assertThrowsExactly(NotYetConnectedException.class, client::shutdownOutput);
            assertThrowsExactly(NotYetConnectedException.class, client::shutdownInput);
            assertTrue("still open", client.isOpen());
        }
    }

    @Test
    public void connectTwiceThrowsAlreadyConnected() throws Exception {
        ServerSocketChannel server = openServer();
        Pair pair = connectPair(server);
        assertThrowsExactly(AlreadyConnectedException.class, () -> pair.client.connect(server.getLocalAddress()));
        assertThrowsExactly(AlreadyConnectedException.class, () -> pair.server.connect(server.getLocalAddress()));
        assertTrue("finishConnect() on a connected channel", pair.client.finishConnect());
        assertTrue("still connected", pair.client.isConnected());
    }

    @Test
    public void nonBlockingConnectPending() throws Exception {
        ServerSocketChannel server = openServer();
        Background<SocketChannel> acceptor = background("accept", () -> track(server.accept()));
        SocketChannel client = newClient();
        client.configureBlocking(false);
        assertFalse("a non-blocking connect() returns false", client.connect(server.getLocalAddress()));
        assertTrue("isConnectionPending()", client.isConnectionPending());
        assertFalse("not connected yet", client.isConnected());
        assertThrowsExactly(ConnectionPendingException.class, () -> client.connect(server.getLocalAddress()));
        assertThrowsExactly(ConnectionPendingException.class, () -> client.bind(loopbackAnyPort()));
        assertThrowsExactly(NotYetConnectedException.class, () -> client.read(ByteBuffer.allocate(1)));
        assertThrowsExactly(NotYetConnectedException.class, () -> client.write(ByteBuffer.allocate(1)));
        assertThrowsExactly(NotYetConnectedException.class, client::shutdownOutput);

        await("finishConnect() to return true", () -> {
            try {
                return client.finishConnect();
            } catch (java.io.IOException e) {
                throw new AssertionError("finishConnect() failed", e);
            }
        });
        assertTrue(client.isConnected());
        assertFalse(client.isConnectionPending());
        assertThrowsExactly(AlreadyConnectedException.class, () -> client.connect(server.getLocalAddress()));
        acceptor.join();
    }

    @Test
    public void connectedChannelAfterCloseThrowsClosedChannel() throws Exception {
        ServerSocketChannel server = openServer();
        Pair pair = connectPair(server);
        SocketChannel client = pair.client;
        client.close();
        assertFalse(client.isOpen());
        assertFalse("the JDK reports not connected after close()", client.isConnected());
        assertClosedChannelBehaviour(client, server.getLocalAddress());
    }

    @Test
    public void unconnectedChannelAfterCloseThrowsClosedChannel() throws Exception {
        ServerSocketChannel server = openServer();
        SocketChannel client = newClient();
        client.close();
        assertClosedChannelBehaviour(client, server.getLocalAddress());
    }

    private void assertClosedChannelBehaviour(SocketChannel client, SocketAddress address) throws Exception {
        assertThrowsExactly(ClosedChannelException.class, () -> client.read(ByteBuffer.allocate(1)));
        assertThrowsExactly(ClosedChannelException.class, () -> client.write(ByteBuffer.allocate(1)));
        assertThrowsExactly(ClosedChannelException.class, () -> client.read(new ByteBuffer[] {ByteBuffer.allocate(1)}));
        assertThrowsExactly(ClosedChannelException.class,
                () -> client.write(new ByteBuffer[] {ByteBuffer.allocate(1)}));
        assertThrowsExactly(ClosedChannelException.class, () -> client.bind(loopbackAnyPort()));
        assertThrowsExactly(ClosedChannelException.class, () -> client.configureBlocking(false));
        assertThrowsExactly(ClosedChannelException.class, client::getLocalAddress);
        assertThrowsExactly(ClosedChannelException.class, client::getRemoteAddress);
        assertThrowsExactly(ClosedChannelException.class, () -> client.getOption(StandardSocketOptions.TCP_NODELAY));
        assertThrowsExactly(ClosedChannelException.class,
                () -> client.setOption(StandardSocketOptions.TCP_NODELAY, true));
        assertThrowsExactly(ClosedChannelException.class, client::shutdownOutput);
        assertThrowsExactly(ClosedChannelException.class, client::shutdownInput);
        // JDK 17: AsynchronousCloseException; JDK 25: ClosedChannelException.
        assertThrows(ClosedChannelException.class, () -> client.connect(address));
        assertThrows(ClosedChannelException.class, client::finishConnect);
        try (Selector selector = provider.openSelector()) {
            assertThrowsExactly(ClosedChannelException.class, () -> client.register(selector, SelectionKey.OP_READ));
        }
        assertTrue("socket().isClosed()", client.socket().isClosed());
    }

    @Test
    public void closedServerThrowsClosedChannel() throws Exception {
        ServerSocketChannel server = openServer();
        server.close();
        // JDK 17: AsynchronousCloseException; JDK 25: ClosedChannelException.
        assertThrows(ClosedChannelException.class, server::accept);
        assertThrowsExactly(ClosedChannelException.class, server::getLocalAddress);
        assertThrowsExactly(ClosedChannelException.class, () -> server.bind(loopbackAnyPort()));
        assertThrowsExactly(ClosedChannelException.class, () -> server.configureBlocking(false));
        assertThrowsExactly(ClosedChannelException.class,
                () -> server.setOption(StandardSocketOptions.SO_REUSEADDR, true));
        assertTrue("socket().isClosed()", server.socket().isClosed());

        ServerSocketChannel nonBlocking = openServer();
        nonBlocking.configureBlocking(false);
        nonBlocking.close();
        assertThrowsExactly(ClosedChannelException.class, nonBlocking::accept);
    }

    @Test
    public void closedSelectorThrowsClosedSelector() throws Exception {
        Selector selector = track(provider.openSelector());
        selector.close();
        assertFalse(selector.isOpen());
        assertThrowsExactly(ClosedSelectorException.class, selector::selectNow);
        assertThrowsExactly(ClosedSelectorException.class, () -> selector.select(1));
        assertThrowsExactly(ClosedSelectorException.class, selector::keys);
        assertThrowsExactly(ClosedSelectorException.class, selector::selectedKeys);
        SocketChannel client = newClient();
        client.configureBlocking(false);
        assertThrowsExactly(ClosedSelectorException.class, () -> client.register(selector, SelectionKey.OP_CONNECT));
        selector.close();
    }

    @Test
    public void bindTwiceThrowsAlreadyBound() throws Exception {
        ServerSocketChannel server = openServer();
        assertThrowsExactly(AlreadyBoundException.class, () -> server.bind(loopbackAnyPort()));
        assertThrowsExactly(AlreadyBoundException.class, () -> server.bind(loopbackAnyPort(), 10));
        SocketChannel client = newClient();
        client.bind(loopbackAnyPort());
        assertThrowsExactly(AlreadyBoundException.class, () -> client.bind(loopbackAnyPort()));
        Pair pair = connectPair(server);
        assertThrowsExactly(AlreadyBoundException.class, () -> pair.client.bind(loopbackAnyPort()));
        assertThrowsExactly(AlreadyBoundException.class, () -> pair.server.bind(loopbackAnyPort()));
    }

    @Test
    public void acceptOnUnboundServerThrowsNotYetBound() throws Exception {
        ServerSocketChannel server = newServer();
        assertThrowsExactly(NotYetBoundException.class, server::accept);
        server.configureBlocking(false);
        assertThrowsExactly(NotYetBoundException.class, server::accept);
        assertTrue("still open", server.isOpen());
    }

    @Test
    public void unresolvedAddressThrowsUnresolvedAddress() throws Exception {
        InetSocketAddress unresolved = InetSocketAddress.createUnresolved("no.such.host.invalid", 80);
        SocketChannel client = newClient();
        assertThrowsExactly(UnresolvedAddressException.class, () -> client.connect(unresolved));
        assertTrue("the JDK leaves the channel open", client.isOpen());
        assertFalse(client.isConnectionPending());
        assertThrowsExactly(UnresolvedAddressException.class, () -> client.bind(unresolved));
        client.configureBlocking(false);
        assertThrowsExactly(UnresolvedAddressException.class, () -> client.connect(unresolved));
        ServerSocketChannel server = newServer();
        assertThrowsExactly(UnresolvedAddressException.class, () -> server.bind(unresolved));
        assertTrue(server.isOpen());
    }

    @Test
    public void otherAddressTypeThrowsUnsupportedAddressType() throws Exception {
        SocketChannel client = newClient();
        assertThrowsExactly(UnsupportedAddressTypeException.class, () -> client.connect(new OtherAddress()));
        assertTrue("the JDK leaves the channel open", client.isOpen());
        assertThrowsExactly(UnsupportedAddressTypeException.class, () -> client.bind(new OtherAddress()));
        ServerSocketChannel server = newServer();
        assertThrowsExactly(UnsupportedAddressTypeException.class, () -> server.bind(new OtherAddress()));
        assertTrue(server.isOpen());
    }

    @Test
    public void blockingModeMisuseThrowsIllegalBlockingMode() throws Exception {
        ServerSocketChannel server = openServer();
        Pair pair = connectPair(server);
        try (Selector selector = provider.openSelector()) {
            assertThrowsExactly(IllegalBlockingModeException.class,
                    () -> pair.client.register(selector, SelectionKey.OP_READ));
            assertThrowsExactly(IllegalBlockingModeException.class,
                    () -> server.register(selector, SelectionKey.OP_ACCEPT));

            pair.client.configureBlocking(false);
            SelectionKey key = pair.client.register(selector, SelectionKey.OP_READ);
            assertThrowsExactly(IllegalBlockingModeException.class, () -> pair.client.configureBlocking(true));
            assertFalse("still non-blocking", pair.client.isBlocking());
            assertThrowsExactly(IllegalBlockingModeException.class,
                    () -> pair.client.socket().getInputStream().read());
            assertThrowsExactly(IllegalBlockingModeException.class,
                    () -> pair.client.socket().getOutputStream().write(1));

            key.cancel();
            selector.selectNow();
            pair.client.configureBlocking(true);
            assertTrue("blocking again once deregistered", pair.client.isBlocking());
        }
    }

    @Test
    public void finishConnectWithoutConnectThrowsNoConnectionPending() throws Exception {
        SocketChannel client = newClient();
        assertThrowsExactly(NoConnectionPendingException.class, client::finishConnect);
        client.configureBlocking(false);
        assertThrowsExactly(NoConnectionPendingException.class, client::finishConnect);
        assertTrue(client.isOpen());
    }

    @Test
    public void nullArgumentsThrowNullPointer() throws Exception {
        ServerSocketChannel server = openServer();
        Pair pair = connectPair(server);
        SocketChannel client = pair.client;
        assertThrowsExactly(NullPointerException.class, () -> client.read((ByteBuffer) null));
        assertThrowsExactly(NullPointerException.class, () -> client.write((ByteBuffer) null));
        assertThrowsExactly(NullPointerException.class, () -> client.read((ByteBuffer[]) null));
        assertThrowsExactly(NullPointerException.class, () -> client.write((ByteBuffer[]) null));
        assertThrowsExactly(NullPointerException.class,
                () -> client.read(new ByteBuffer[] {ByteBuffer.allocate(1), null}));
        assertThrowsExactly(NullPointerException.class,
                () -> client.write(new ByteBuffer[] {ByteBuffer.allocate(1), null}));
        assertThrowsExactly(NullPointerException.class, () -> client.setOption(null, 1));
        assertThrowsExactly(NullPointerException.class, () -> client.getOption(null));
        SocketChannel unconnected = newClient();
        assertThrowsExactly(NullPointerException.class, () -> unconnected.connect(null));
        assertTrue(unconnected.isOpen());

        ByteBuffer one = ByteBuffer.wrap(new byte[] {3});
        assertEquals("a null outside the offset/length range is ignored", 1L,
                client.write(new ByteBuffer[] {one, null}, 0, 1));
        assertEquals(3, readExactly(pair.server, 1)[0]);
        client.close();
        assertThrowsExactly(NullPointerException.class, () -> client.read((ByteBuffer) null));
    }

    @Test
    public void invalidInterestOpsThrowIllegalArgument() throws Exception {
        ServerSocketChannel server = openServer();
        Pair pair = connectPair(server);
        try (Selector selector = provider.openSelector()) {
            pair.client.configureBlocking(false);
            assertThrowsExactly(IllegalArgumentException.class,
                    () -> pair.client.register(selector, SelectionKey.OP_ACCEPT));
            SelectionKey key = pair.client.register(selector, SelectionKey.OP_READ);
            assertThrowsExactly(IllegalArgumentException.class, () -> key.interestOps(SelectionKey.OP_ACCEPT));
            assertThrowsExactly(IllegalArgumentException.class, () -> key.interestOps(-1));
            assertThrowsExactly(IllegalArgumentException.class, () -> key.interestOps(1 << 10));
            assertEquals("interest set unchanged", SelectionKey.OP_READ, key.interestOps());
            assertEquals("validOps of a SocketChannel",
                    SelectionKey.OP_READ | SelectionKey.OP_WRITE | SelectionKey.OP_CONNECT, pair.client.validOps());

            server.configureBlocking(false);
            assertThrowsExactly(IllegalArgumentException.class, () -> server.register(selector, SelectionKey.OP_READ));
            assertEquals("validOps of a ServerSocketChannel", SelectionKey.OP_ACCEPT, server.validOps());

            key.cancel();
            assertFalse(key.isValid());
            assertThrowsExactly(CancelledKeyException.class, () -> key.interestOps(SelectionKey.OP_WRITE));
            assertThrowsExactly(CancelledKeyException.class, key::readyOps);
        }
    }
}
