package dev.hadronio.conformance;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertSame;
import static org.junit.Assert.assertTrue;

import java.net.SocketOption;
import java.net.StandardSocketOptions;
import java.nio.channels.NetworkChannel;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.util.Arrays;
import java.util.List;
import java.util.Set;
import org.junit.Test;
import org.junit.runner.RunWith;
import org.junit.runners.Parameterized;
import org.junit.runners.Parameterized.Parameters;

/**
 * Scenario 12, options: {@code supportedOptions()}, the JDK's defaults, exact round trips of booleans,
 * {@code SO_LINGER} and {@code IP_TOS}, positive buffer sizes (the kernel rounds them), and the exceptions
 * for unsupported options and bad values.
 */
@RunWith(Parameterized.class)
public class SocketOptionsTest extends AbstractConformanceTest {

    static final List<SocketOption<?>> CLIENT_OPTIONS = Arrays.asList(StandardSocketOptions.TCP_NODELAY,
            StandardSocketOptions.SO_SNDBUF, StandardSocketOptions.SO_RCVBUF, StandardSocketOptions.SO_KEEPALIVE,
            StandardSocketOptions.SO_LINGER, StandardSocketOptions.SO_REUSEADDR, StandardSocketOptions.SO_REUSEPORT,
            StandardSocketOptions.IP_TOS);

    @Parameters(name = "{0}")
    public static List<Object[]> parameters() {
        return Providers.parameters();
    }

    @Test
    public void supportedOptions() throws Exception {
        Set<SocketOption<?>> client = newClient().supportedOptions();
        for (SocketOption<?> option : CLIENT_OPTIONS) {
            assertTrue("SocketChannel supports " + option, client.contains(option));
        }
        Set<SocketOption<?>> server = newServer().supportedOptions();
        assertTrue("ServerSocketChannel supports SO_RCVBUF", server.contains(StandardSocketOptions.SO_RCVBUF));
        assertTrue("ServerSocketChannel supports SO_REUSEADDR", server.contains(StandardSocketOptions.SO_REUSEADDR));
        assertTrue("ServerSocketChannel supports SO_REUSEPORT", server.contains(StandardSocketOptions.SO_REUSEPORT));
    }

    /**
     * {@code SO_REUSEPORT} does what the kernel makes of it: two listening channels that both set it share one
     * port, and a connection to it is accepted by one of them; without it the second bind fails.
     */
    @Test
    public void reusePortSharesAPort() throws Exception {
        ServerSocketChannel first = newServer();
        assertEquals(Boolean.FALSE, first.getOption(StandardSocketOptions.SO_REUSEPORT));
        first.setOption(StandardSocketOptions.SO_REUSEPORT, true);
        assertEquals(Boolean.TRUE, first.getOption(StandardSocketOptions.SO_REUSEPORT));
        first.bind(loopbackAnyPort());
        java.net.InetSocketAddress address = (java.net.InetSocketAddress) first.getLocalAddress();
        ServerSocketChannel plain = newServer();
        assertThrowsExactly(java.net.BindException.class, () -> plain.bind(address));
        ServerSocketChannel second = newServer();
        second.setOption(StandardSocketOptions.SO_REUSEPORT, true);
        second.bind(address);
        assertEquals(address, second.getLocalAddress());
        SocketChannel client = newClient();
        client.setOption(StandardSocketOptions.SO_REUSEPORT, true);
        assertEquals(Boolean.TRUE, client.getOption(StandardSocketOptions.SO_REUSEPORT));
        client.connect(address);
        first.configureBlocking(false);
        second.configureBlocking(false);
        SocketChannel accepted = null;
        long deadline = System.nanoTime() + java.util.concurrent.TimeUnit.SECONDS.toNanos(10);
        while (accepted == null && System.nanoTime() < deadline) {
            accepted = first.accept();
            if (accepted == null) {
                accepted = second.accept();
            }
            if (accepted == null) {
                Thread.sleep(1);
            }
        }
        assertTrue("one of the two channels accepted the connection", accepted != null);
        track(accepted);
        client.write(java.nio.ByteBuffer.wrap(new byte[] {42}));
        assertEquals(42, readExactly(accepted, 1)[0]);
    }

    @Test
    public void defaultsOfUnconnectedClient() throws Exception {
        assertClientDefaults(newClient(), false);
    }

    @Test
    public void defaultsOfConnectedChannels() throws Exception {
        Pair pair = connectPair();
        assertClientDefaults(pair.client, false);
        // An accepted socket inherits the listening socket's options, which has SO_REUSEADDR on (kernel).
        assertClientDefaults(pair.server, true);
    }

    @Test
    public void defaultsOfServer() throws Exception {
        ServerSocketChannel server = newServer();
        assertEquals("the JDK enables SO_REUSEADDR on server channels", Boolean.TRUE,
                server.getOption(StandardSocketOptions.SO_REUSEADDR));
        assertTrue("SO_RCVBUF positive", server.getOption(StandardSocketOptions.SO_RCVBUF) > 0);
        server.bind(loopbackAnyPort());
        assertEquals(Boolean.TRUE, server.getOption(StandardSocketOptions.SO_REUSEADDR));
    }

    @Test
    public void unconnectedClientRoundTrips() throws Exception {
        assertClientRoundTrips(newClient());
    }

    @Test
    public void connectedChannelsRoundTrip() throws Exception {
        Pair pair = connectPair();
        assertClientRoundTrips(pair.client);
        assertClientRoundTrips(pair.server);
        pair.client.write(java.nio.ByteBuffer.wrap(new byte[] {1}));
        assertEquals("data still flows after changing options", 1, readExactly(pair.server, 1)[0]);
    }

    /**
     * Options read as the application left them once data has flowed. (hadroNIO has then upgraded the
     * connection to UCX and turned on its own keepalive timers on the TCP socket, see
     * {@code hadronio.livenessMillis}; {@code SO_KEEPALIVE} must still read as set.)
     */
    @Test
    public void optionsAfterDataFlowed() throws Exception {
        Pair pair = connectPair();
        // With hadronio.transport=tcp (the suite's second run) every connection stays on TCP; else
        // the upgrade completes while round trips go on (how many it takes depends on the host).
        String expected = "tcp".equals(System.getProperty("hadronio.transport")) ? "tcp" : "ucx";
        long deadline = System.nanoTime() + 10_000_000_000L;
        for (int i = 0; i < 10 || (target.isHadronio() && !pathsStartWith(pair, expected) && System.nanoTime() < deadline); i++) {
            pair.client.write(java.nio.ByteBuffer.wrap(new byte[] {(byte) i}));
            assertEquals((byte) i, readExactly(pair.server, 1)[0]);
            pair.server.write(java.nio.ByteBuffer.wrap(new byte[] {(byte) i}));
            assertEquals((byte) i, readExactly(pair.client, 1)[0]);
        }
        if (target.isHadronio()) {
            for (SocketChannel channel : new SocketChannel[] {pair.client, pair.server}) {
                String path = ((dev.hadronio.nio.HadronioSocketChannel) channel).transportDescription();
                assertTrue("on " + expected + ": " + path, path.startsWith(expected));
            }
        }
        assertClientDefaults(pair.client, false);
        assertClientDefaults(pair.server, true);
        assertClientRoundTrips(pair.client);
        assertClientRoundTrips(pair.server);
        pair.client.write(java.nio.ByteBuffer.wrap(new byte[] {7}));
        assertEquals("data still flows after changing options", 7, readExactly(pair.server, 1)[0]);
    }

    private static boolean pathsStartWith(Pair pair, String expected) throws java.io.IOException {
        return ((dev.hadronio.nio.HadronioSocketChannel) pair.client).transportDescription().startsWith(expected)
                && ((dev.hadronio.nio.HadronioSocketChannel) pair.server).transportDescription().startsWith(expected);
    }

    @Test
    public void serverRoundTrips() throws Exception {
        ServerSocketChannel server = newServer();
        assertSame("setOption returns the channel", server,
                server.setOption(StandardSocketOptions.SO_REUSEADDR, false));
        assertEquals(Boolean.FALSE, server.getOption(StandardSocketOptions.SO_REUSEADDR));
        server.setOption(StandardSocketOptions.SO_REUSEADDR, true);
        assertEquals(Boolean.TRUE, server.getOption(StandardSocketOptions.SO_REUSEADDR));
        server.setOption(StandardSocketOptions.SO_RCVBUF, 128 * 1024);
        assertTrue(server.getOption(StandardSocketOptions.SO_RCVBUF) > 0);
        server.bind(loopbackAnyPort());
        server.setOption(StandardSocketOptions.SO_RCVBUF, 64 * 1024);
        assertTrue(server.getOption(StandardSocketOptions.SO_RCVBUF) > 0);
    }

    @Test
    public void unsupportedOptionThrowsUnsupportedOperation() throws Exception {
        SocketChannel client = newClient();
        assertThrowsExactly(UnsupportedOperationException.class,
                () -> client.setOption(StandardSocketOptions.IP_MULTICAST_TTL, 1));
        assertThrowsExactly(UnsupportedOperationException.class,
                () -> client.getOption(StandardSocketOptions.IP_MULTICAST_TTL));
        assertThrowsExactly(UnsupportedOperationException.class,
                () -> client.setOption(StandardSocketOptions.SO_BROADCAST, true));
        ServerSocketChannel server = newServer();
        assertThrowsExactly(UnsupportedOperationException.class,
                () -> server.setOption(StandardSocketOptions.TCP_NODELAY, true));
        assertThrowsExactly(UnsupportedOperationException.class,
                () -> server.getOption(StandardSocketOptions.SO_SNDBUF));
        assertThrowsExactly(UnsupportedOperationException.class,
                () -> server.getOption(StandardSocketOptions.SO_LINGER));
    }

    @Test
    public void badValuesThrowIllegalArgument() throws Exception {
        SocketChannel client = newClient();
        assertThrowsExactly(IllegalArgumentException.class,
                () -> client.setOption(StandardSocketOptions.SO_SNDBUF, -1));
        assertThrowsExactly(IllegalArgumentException.class,
                () -> client.setOption(StandardSocketOptions.SO_RCVBUF, -1));
        assertThrowsExactly(IllegalArgumentException.class, () -> client.setOption(StandardSocketOptions.IP_TOS, 256));
        assertThrowsExactly(IllegalArgumentException.class, () -> client.setOption(StandardSocketOptions.IP_TOS, -1));
        assertThrowsExactly(IllegalArgumentException.class,
                () -> client.setOption(StandardSocketOptions.TCP_NODELAY, null));
        ServerSocketChannel server = newServer();
        assertThrowsExactly(IllegalArgumentException.class,
                () -> server.setOption(StandardSocketOptions.SO_RCVBUF, -1));
        assertTrue(client.isOpen());
        assertTrue(server.isOpen());
    }

    private static void assertClientDefaults(SocketChannel channel, boolean reuseAddress) throws Exception {
        assertEquals("TCP_NODELAY default", Boolean.FALSE, channel.getOption(StandardSocketOptions.TCP_NODELAY));
        assertEquals("SO_KEEPALIVE default", Boolean.FALSE, channel.getOption(StandardSocketOptions.SO_KEEPALIVE));
        assertEquals("SO_REUSEADDR default", reuseAddress, channel.getOption(StandardSocketOptions.SO_REUSEADDR));
        assertEquals("SO_REUSEPORT default", Boolean.FALSE, channel.getOption(StandardSocketOptions.SO_REUSEPORT));
        assertEquals("SO_LINGER default", Integer.valueOf(-1), channel.getOption(StandardSocketOptions.SO_LINGER));
        assertEquals("IP_TOS default", Integer.valueOf(0), channel.getOption(StandardSocketOptions.IP_TOS));
        assertTrue("SO_SNDBUF positive", channel.getOption(StandardSocketOptions.SO_SNDBUF) > 0);
        assertTrue("SO_RCVBUF positive", channel.getOption(StandardSocketOptions.SO_RCVBUF) > 0);
    }

    private static void assertClientRoundTrips(SocketChannel channel) throws Exception {
        for (SocketOption<Boolean> option : Arrays.asList(StandardSocketOptions.TCP_NODELAY,
                StandardSocketOptions.SO_KEEPALIVE, StandardSocketOptions.SO_REUSEADDR,
                StandardSocketOptions.SO_REUSEPORT)) {
            for (boolean value : new boolean[] {true, false, true}) {
                assertSame("setOption returns the channel", channel, channel.setOption(option, value));
                assertEquals(option + " round trip", value, channel.getOption(option));
            }
        }
        for (int linger : new int[] {5, 0, -1, 30}) {
            channel.setOption(StandardSocketOptions.SO_LINGER, linger);
            assertEquals("SO_LINGER round trip", Integer.valueOf(linger),
                    channel.getOption(StandardSocketOptions.SO_LINGER));
        }
        channel.setOption(StandardSocketOptions.SO_LINGER, -1);
        channel.setOption(StandardSocketOptions.IP_TOS, 0x10);
        assertEquals("IP_TOS round trip", Integer.valueOf(0x10), channel.getOption(StandardSocketOptions.IP_TOS));
        channel.setOption(StandardSocketOptions.SO_SNDBUF, 256 * 1024);
        assertTrue("SO_SNDBUF positive", channel.getOption(StandardSocketOptions.SO_SNDBUF) > 0);
        channel.setOption(StandardSocketOptions.SO_RCVBUF, 256 * 1024);
        assertTrue("SO_RCVBUF positive", channel.getOption(StandardSocketOptions.SO_RCVBUF) > 0);
        setAndCheckPositive(channel, StandardSocketOptions.SO_SNDBUF, 1);
    }

    private static void setAndCheckPositive(NetworkChannel channel, SocketOption<Integer> option, int value)
            throws Exception {
        channel.setOption(option, value);
        assertTrue(option + " positive after setting " + value, channel.getOption(option) > 0);
    }
}
