package dev.hadronio.conformance;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertNotEquals;
import static org.junit.Assert.assertNotNull;
import static org.junit.Assert.assertNull;
import static org.junit.Assert.assertThrows;
import static org.junit.Assert.assertTrue;

import java.net.BindException;
import java.net.ConnectException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.SocketAddress;
import java.net.StandardSocketOptions;
import java.nio.ByteBuffer;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import org.junit.Test;
import org.junit.runner.RunWith;
import org.junit.runners.Parameterized;
import org.junit.runners.Parameterized.Parameters;

/**
 * Scenario 6: binding and addresses. Ephemeral ports, local and remote addresses on both ends, a bind
 * backlog (connections complete before {@code accept()}, as in the kernel's accept queue),
 * {@code SO_REUSEADDR} set before bind, a client bound before connecting, and an occupied port.
 */
@RunWith(Parameterized.class)
public class BindAndAddressTest extends AbstractConformanceTest {

    static final InetAddress LOOPBACK = loopbackAnyPort().getAddress();

    @Parameters(name = "{0}")
    public static List<Object[]> parameters() {
        return Providers.parameters();
    }

    @Test
    public void ephemeralBindReportsPort() throws Exception {
        ServerSocketChannel server = newServer();
        assertNull("unbound server has no local address", server.getLocalAddress());
        server.bind(loopbackAnyPort());
        InetSocketAddress local = (InetSocketAddress) server.getLocalAddress();
        assertEquals("bound address", LOOPBACK, local.getAddress());
        assertNotEquals("bound port", 0, local.getPort());
        assertEquals("socket().getLocalPort()", local.getPort(), server.socket().getLocalPort());
    }

    @Test
    public void addressesMatchAcrossConnection() throws Exception {
        ServerSocketChannel server = openServer();
        SocketChannel unconnected = newClient();
        assertNull("unconnected client has no local address", unconnected.getLocalAddress());
        assertNull("unconnected client has no remote address", unconnected.getRemoteAddress());

        Pair pair = connectPair(server);
        SocketAddress serverAddress = server.getLocalAddress();
        InetSocketAddress clientLocal = (InetSocketAddress) pair.client.getLocalAddress();
        assertEquals("client's remote address is the server's local address", serverAddress,
                pair.client.getRemoteAddress());
        assertEquals("client's local address", LOOPBACK, clientLocal.getAddress());
        assertNotEquals("client's local port", 0, clientLocal.getPort());
        assertEquals("accepted channel's remote address is the client's local address", clientLocal,
                pair.server.getRemoteAddress());
        assertEquals("accepted channel's local address is the server's", serverAddress,
                pair.server.getLocalAddress());
    }

    /**
     * Connections to a bound server complete (blocking {@code connect()} returns true) before the server
     * calls {@code accept()}, up to the backlog, and are then accepted in any order.
     */
    @Test
    public void backlogQueuesConnectionsUntilAccepted() throws Exception {
        ServerSocketChannel server = newServer();
        server.bind(loopbackAnyPort(), 5);
        List<SocketChannel> clients = new ArrayList<>();
        Set<SocketAddress> clientAddresses = new HashSet<>();
        for (int i = 0; i < 3; i++) {
            SocketChannel client = newClient();
            assertTrue("connect() #" + i + " completes before accept()", client.connect(server.getLocalAddress()));
            clients.add(client);
            clientAddresses.add(client.getLocalAddress());
        }
        Set<SocketAddress> acceptedAddresses = new HashSet<>();
        for (int i = 0; i < clients.size(); i++) {
            SocketChannel accepted = track(server.accept());
            assertNotNull("accept() #" + i, accepted);
            acceptedAddresses.add(accepted.getRemoteAddress());
            accepted.write(ByteBuffer.wrap(new byte[] {(byte) i}));
        }
        assertEquals("accepted the queued connections", clientAddresses, acceptedAddresses);
        Set<Byte> received = new HashSet<>();
        for (SocketChannel client : clients) {
            received.add(readExactly(client, 1)[0]);
        }
        assertEquals("each client got one distinct byte", 3, received.size());
    }

    @Test
    public void reuseAddressSetBeforeBind() throws Exception {
        ServerSocketChannel first = newServer();
        first.setOption(StandardSocketOptions.SO_REUSEADDR, true);
        first.bind(loopbackAnyPort());
        assertEquals("SO_REUSEADDR after bind", Boolean.TRUE, first.getOption(StandardSocketOptions.SO_REUSEADDR));
        SocketAddress address = first.getLocalAddress();

        // The server side closes first, leaving that port's connection in TIME_WAIT.
        Pair pair = connectPair(first);
        pair.server.close();
        assertEquals("end of stream", -1, pair.client.read(ByteBuffer.allocate(1)));
        pair.client.close();
        first.close();

        ServerSocketChannel second = newServer();
        second.setOption(StandardSocketOptions.SO_REUSEADDR, true);
        second.bind(address);
        assertEquals("rebound to the same address", address, second.getLocalAddress());
        Pair again = connectPair(second);
        again.client.write(ByteBuffer.wrap(new byte[] {42}));
        assertEquals("data over the rebound port", 42, readExactly(again.server, 1)[0]);
    }

    @Test
    public void bindToListeningPortThrowsBindException() throws Exception {
        ServerSocketChannel first = openServer();
        ServerSocketChannel second = newServer();
        assertThrowsExactly(BindException.class, () -> second.bind(first.getLocalAddress()));
        assertTrue("the JDK leaves the channel open after a failed bind", second.isOpen());
        assertNull("and unbound", second.getLocalAddress());
        SocketChannel client = newClient();
        assertThrowsExactly(BindException.class, () -> client.bind(first.getLocalAddress()));
        assertTrue("client channel open after a failed bind", client.isOpen());
    }

    @Test
    public void clientBoundBeforeConnect() throws Exception {
        ServerSocketChannel server = openServer();
        SocketChannel client = newClient();
        client.bind(loopbackAnyPort());
        InetSocketAddress bound = (InetSocketAddress) client.getLocalAddress();
        assertEquals("client bound address", LOOPBACK, bound.getAddress());
        assertNotEquals("client bound port", 0, bound.getPort());
        assertTrue(client.socket().isBound());
        assertNull("bound but unconnected: no remote address", client.getRemoteAddress());

        Background<SocketChannel> acceptor = background("accept", () -> track(server.accept()));
        assertTrue(client.connect(server.getLocalAddress()));
        SocketChannel accepted = acceptor.join();
        assertEquals("local address unchanged by connect()", bound, client.getLocalAddress());
        assertEquals("accepted channel sees the bound address", bound, accepted.getRemoteAddress());
    }

    @Test
    public void bindNullUsesWildcardAndEphemeralPort() throws Exception {
        ServerSocketChannel server = newServer();
        server.bind(null);
        InetSocketAddress serverLocal = (InetSocketAddress) server.getLocalAddress();
        assertTrue("wildcard address: " + serverLocal, serverLocal.getAddress().isAnyLocalAddress());
        assertNotEquals(0, serverLocal.getPort());

        SocketChannel client = newClient();
        client.bind(null);
        InetSocketAddress clientLocal = (InetSocketAddress) client.getLocalAddress();
        assertTrue("wildcard address: " + clientLocal, clientLocal.getAddress().isAnyLocalAddress());
        assertNotEquals(0, clientLocal.getPort());

        Background<SocketChannel> acceptor = background("accept", () -> track(server.accept()));
        assertTrue(client.connect(new InetSocketAddress(LOOPBACK, serverLocal.getPort())));
        SocketChannel accepted = acceptor.join();
        assertEquals("same port after connect()", clientLocal.getPort(),
                ((InetSocketAddress) client.getLocalAddress()).getPort());
        assertEquals(client.getLocalAddress(), accepted.getRemoteAddress());
    }

    /**
     * A listener bound to one address accepts only there: 127.0.0.2 (also this machine's loopback)
     * is refused while 127.0.0.1 connects; a wildcard listener takes both.
     */
    @Test
    public void listenerBoundToAnAddressAcceptsOnlyThere() throws Exception {
        ServerSocketChannel server = openServer();
        int port = portOf(server);
        InetSocketAddress other = new InetSocketAddress(InetAddress.getByName("127.0.0.2"), port);
        SocketChannel refused = newClient();
        assertThrows(ConnectException.class, () -> refused.connect(other));
        SocketChannel accepted = newClient();
        assertTrue(accepted.connect(new InetSocketAddress(InetAddress.getByName("127.0.0.1"), port)));
        track(server.accept());

        ServerSocketChannel wildcard = newServer();
        wildcard.bind(new InetSocketAddress(0));
        SocketChannel viaOther = newClient();
        assertTrue(viaOther.connect(new InetSocketAddress(InetAddress.getByName("127.0.0.2"), portOf(wildcard))));
        SocketChannel connection = track(wildcard.accept());
        assertEquals(InetAddress.getByName("127.0.0.2"), ((InetSocketAddress) connection.getLocalAddress()).getAddress());
    }
}
