package dev.hadronio.conformance;

import static org.junit.Assert.assertArrayEquals;
import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertFalse;
import static org.junit.Assert.assertNotNull;
import static org.junit.Assert.assertNull;
import static org.junit.Assert.assertSame;
import static org.junit.Assert.assertTrue;

import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.SocketException;
import java.net.SocketTimeoutException;
import java.net.StandardSocketOptions;
import java.nio.ByteBuffer;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.util.List;
import org.junit.Test;
import org.junit.runner.RunWith;
import org.junit.runners.Parameterized;
import org.junit.runners.Parameterized.Parameters;

/**
 * Scenario 12, adaptors: {@code socket()} of both channel types returns the same non-null adaptor each
 * time, its getters report what the channel reports, its setters reach the channel, a timed read or
 * accept throws {@link SocketTimeoutException} and leaves the channel usable, and its streams carry data.
 */
@RunWith(Parameterized.class)
public class SocketAdaptorTest extends AbstractConformanceTest {

    static final InetAddress LOOPBACK = loopbackAnyPort().getAddress();

    @Parameters(name = "{0}")
    public static List<Object[]> parameters() {
        return Providers.parameters();
    }

    @Test
    public void unconnectedSocketGetters() throws Exception {
        SocketChannel channel = newClient();
        Socket socket = channel.socket();
        assertNotNull("socket()", socket);
        assertSame("socket() returns one adaptor", socket, channel.socket());
        assertSame("getChannel()", channel, socket.getChannel());
        assertFalse(socket.isConnected());
        assertFalse(socket.isBound());
        assertFalse(socket.isClosed());
        assertNull("getInetAddress()", socket.getInetAddress());
        assertEquals("getPort()", 0, socket.getPort());
        assertEquals("getLocalPort()", -1, socket.getLocalPort());
        assertTrue("getLocalAddress() is the wildcard", socket.getLocalAddress().isAnyLocalAddress());
        assertNull("getRemoteSocketAddress()", socket.getRemoteSocketAddress());
        assertDefaultOptionGetters(socket, false);
    }

    @Test
    public void connectedSocketGetters() throws Exception {
        ServerSocketChannel server = openServer();
        Pair pair = connectPair(server);
        for (SocketChannel channel : new SocketChannel[] {pair.client, pair.server}) {
            Socket socket = channel.socket();
            InetSocketAddress local = (InetSocketAddress) channel.getLocalAddress();
            InetSocketAddress remote = (InetSocketAddress) channel.getRemoteAddress();
            assertTrue(socket.isConnected());
            assertTrue(socket.isBound());
            assertFalse(socket.isClosed());
            assertEquals("getInetAddress()", LOOPBACK, socket.getInetAddress());
            assertEquals("getPort()", remote.getPort(), socket.getPort());
            assertEquals("getLocalPort()", local.getPort(), socket.getLocalPort());
            assertEquals("getLocalAddress()", LOOPBACK, socket.getLocalAddress());
            assertEquals("getRemoteSocketAddress()", remote, socket.getRemoteSocketAddress());
            assertEquals("getLocalSocketAddress()", local, socket.getLocalSocketAddress());
            assertFalse(socket.isInputShutdown());
            assertFalse(socket.isOutputShutdown());
            // An accepted socket inherits SO_REUSEADDR from the listening socket (on by default).
            assertDefaultOptionGetters(socket, channel == pair.server);
        }
        assertEquals("client's getPort() is the server's port", portOf(server), pair.client.socket().getPort());
    }

    @Test
    public void settersReachTheChannel() throws Exception {
        Pair pair = connectPair();
        Socket socket = pair.client.socket();
        socket.setTcpNoDelay(true);
        assertTrue(socket.getTcpNoDelay());
        assertEquals(Boolean.TRUE, pair.client.getOption(StandardSocketOptions.TCP_NODELAY));
        socket.setKeepAlive(true);
        assertTrue(socket.getKeepAlive());
        assertEquals(Boolean.TRUE, pair.client.getOption(StandardSocketOptions.SO_KEEPALIVE));
        socket.setReuseAddress(true);
        assertTrue(socket.getReuseAddress());
        socket.setSoLinger(true, 7);
        assertEquals(7, socket.getSoLinger());
        assertEquals(Integer.valueOf(7), pair.client.getOption(StandardSocketOptions.SO_LINGER));
        socket.setSoLinger(false, 0);
        assertEquals(-1, socket.getSoLinger());
        socket.setTrafficClass(0x10);
        assertEquals(0x10, socket.getTrafficClass());
        socket.setSendBufferSize(64 * 1024);
        assertTrue(socket.getSendBufferSize() > 0);
        socket.setReceiveBufferSize(64 * 1024);
        assertTrue(socket.getReceiveBufferSize() > 0);
        socket.setSoTimeout(1234);
        assertEquals(1234, socket.getSoTimeout());
        socket.setSoTimeout(0);
        assertEquals(0, socket.getSoTimeout());
        socket.setTcpNoDelay(false);
        assertFalse(pair.client.getOption(StandardSocketOptions.TCP_NODELAY));

        assertThrowsExactly(IllegalArgumentException.class, () -> socket.setSoTimeout(-1));
        assertThrowsExactly(IllegalArgumentException.class, () -> socket.setSendBufferSize(0));
        assertThrowsExactly(IllegalArgumentException.class, () -> socket.setReceiveBufferSize(-1));

        pair.client.write(ByteBuffer.wrap(new byte[] {1}));
        assertEquals("data still flows", 1, readExactly(pair.server, 1)[0]);
    }

    @Test
    public void timedReadThrowsSocketTimeoutAndChannelStaysUsable() throws Exception {
        Pair pair = connectPair();
        Socket socket = pair.client.socket();
        socket.setSoTimeout(200);
        InputStream in = socket.getInputStream();
        assertThrowsExactly(SocketTimeoutException.class, in::read);
        assertThrowsExactly(SocketTimeoutException.class, () -> in.read(new byte[10], 2, 5));
        assertTrue("open after a timeout", pair.client.isOpen());
        assertTrue("connected after a timeout", pair.client.isConnected());

        pair.server.write(ByteBuffer.wrap(new byte[] {42, 43}));
        assertEquals("read after a timeout", 42, in.read());
        socket.setSoTimeout(0);
        assertEquals(43, in.read());
        pair.server.shutdownOutput();
        assertEquals("end of stream", -1, in.read());
        assertEquals("end of stream again", -1, in.read(new byte[4]));
    }

    @Test
    public void streamsEcho() throws Exception {
        Pair pair = connectPair();
        Background<Long> echo = startEcho(pair.server, BufferKind.HEAP, 8192);
        Socket socket = pair.client.socket();
        byte[] data = randomBytes(50, 300_000);
        OutputStream out = socket.getOutputStream();
        InputStream in = socket.getInputStream();
        Background<Void> writer = background("writer", () -> {
            out.write(data, 0, 1000);
            out.write(data[1000]);
            out.write(data, 1001, data.length - 1001);
            out.flush();
            socket.shutdownOutput();
            return null;
        });
        byte[] received = new byte[data.length];
        int total = 0;
        while (total < data.length) {
            int n = in.read(received, total, Math.min(7000, data.length - total));
            assertTrue("read() from the stream returned " + n, n > 0);
            total += n;
        }
        writer.join();
        assertTrue(socket.isOutputShutdown());
        assertEquals("end of stream after the echo", -1, in.read());
        assertEquals((long) data.length, (long) echo.join());
        assertArrayEquals("echo through the socket streams", data, received);
    }

    @Test
    public void socketCloseClosesChannel() throws Exception {
        Pair pair = connectPair();
        pair.client.socket().close();
        assertFalse("channel closed by socket().close()", pair.client.isOpen());
        assertTrue(pair.client.socket().isClosed());
        assertThrowsExactly(SocketException.class, () -> pair.client.socket().getTcpNoDelay());
        assertEquals("peer sees end of stream", -1, pair.server.read(ByteBuffer.allocate(1)));
    }

    @Test
    public void socketConnect() throws Exception {
        ServerSocketChannel server = openServer();
        Background<SocketChannel> acceptor = background("accept", () -> track(server.accept()));
        SocketChannel channel = newClient();
        channel.socket().connect(server.getLocalAddress(), 10_000);
        SocketChannel accepted = acceptor.join();
        assertTrue(channel.isConnected());
        assertEquals(server.getLocalAddress(), channel.getRemoteAddress());
        assertEquals(channel.getLocalAddress(), accepted.getRemoteAddress());
    }

    @Test
    public void unboundServerSocketGetters() throws Exception {
        ServerSocketChannel server = newServer();
        ServerSocket socket = server.socket();
        assertNotNull("socket()", socket);
        assertSame("socket() returns one adaptor", socket, server.socket());
        assertSame("getChannel()", server, socket.getChannel());
        assertFalse(socket.isBound());
        assertFalse(socket.isClosed());
        assertEquals("getLocalPort()", -1, socket.getLocalPort());
        assertNull("getInetAddress()", socket.getInetAddress());
        assertNull("getLocalSocketAddress()", socket.getLocalSocketAddress());
        assertTrue("getReuseAddress()", socket.getReuseAddress());
        assertEquals("getSoTimeout()", 0, socket.getSoTimeout());
        assertTrue("getReceiveBufferSize()", socket.getReceiveBufferSize() > 0);
    }

    @Test
    public void serverSocketBindGettersAndSetters() throws Exception {
        ServerSocketChannel server = newServer();
        ServerSocket socket = server.socket();
        socket.bind(loopbackAnyPort(), 10);
        InetSocketAddress local = (InetSocketAddress) server.getLocalAddress();
        assertNotNull("bound through the adaptor", local);
        assertTrue(socket.isBound());
        assertEquals(local.getPort(), socket.getLocalPort());
        assertEquals(LOOPBACK, socket.getInetAddress());
        assertEquals(local, socket.getLocalSocketAddress());
        socket.setSoTimeout(500);
        assertEquals(500, socket.getSoTimeout());
        socket.setReceiveBufferSize(64 * 1024);
        assertTrue(socket.getReceiveBufferSize() > 0);
        socket.setReuseAddress(false);
        assertFalse(socket.getReuseAddress());
        assertEquals(Boolean.FALSE, server.getOption(StandardSocketOptions.SO_REUSEADDR));
        socket.close();
        assertFalse("channel closed by socket().close()", server.isOpen());
        assertTrue(socket.isClosed());
    }

    @Test
    public void serverSocketAcceptAndTimeout() throws Exception {
        ServerSocketChannel server = openServer();
        ServerSocket socket = server.socket();
        socket.setSoTimeout(200);
        assertThrowsExactly(SocketTimeoutException.class, socket::accept);
        assertTrue("open after an accept timeout", server.isOpen());

        SocketChannel client = newClient();
        Background<Boolean> connector = background("connect", () -> client.connect(server.getLocalAddress()));
        socket.setSoTimeout(0);
        Socket accepted = track(socket.accept());
        assertTrue(connector.join());
        SocketChannel acceptedChannel = accepted.getChannel();
        assertNotNull("accepted socket has a channel", acceptedChannel);
        assertSame("of the provider under test", provider, acceptedChannel.provider());
        assertEquals(LOOPBACK, accepted.getInetAddress());
        assertEquals(client.socket().getLocalPort(), accepted.getPort());
        client.write(ByteBuffer.wrap(new byte[] {77}));
        assertEquals(77, accepted.getInputStream().read());
    }

    private static void assertDefaultOptionGetters(Socket socket, boolean reuseAddress) throws Exception {
        assertFalse("getTcpNoDelay()", socket.getTcpNoDelay());
        assertTrue("getSendBufferSize()", socket.getSendBufferSize() > 0);
        assertTrue("getReceiveBufferSize()", socket.getReceiveBufferSize() > 0);
        assertFalse("getKeepAlive()", socket.getKeepAlive());
        assertEquals("getSoLinger()", -1, socket.getSoLinger());
        assertEquals("getReuseAddress()", reuseAddress, socket.getReuseAddress());
        assertEquals("getTrafficClass()", 0, socket.getTrafficClass());
        assertEquals("getSoTimeout()", 0, socket.getSoTimeout());
    }
}
