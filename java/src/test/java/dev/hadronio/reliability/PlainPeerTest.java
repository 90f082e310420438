package dev.hadronio.reliability;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertTrue;

import dev.hadronio.nio.HadronioSocketChannel;
import java.io.File;
import java.io.IOException;
import java.io.InputStream;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.nio.channels.spi.SelectorProvider;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.StandardCopyOption;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Random;
import java.util.concurrent.atomic.AtomicReference;
import java.util.zip.CRC32;
import org.junit.Rule;
import org.junit.Test;
import org.junit.rules.TemporaryFolder;
import org.junit.rules.TestRule;
import org.junit.runner.RunWith;
import org.junit.runners.Parameterized;
import org.junit.runners.Parameterized.Parameter;
import org.junit.runners.Parameterized.Parameters;

/**
 * Plain TCP peers, both directions: programs that know nothing of hadroNIO (Python's socket module,
 * {@code plain_peer.py}, and a JVM on the JDK's provider) meet a channel of the provider under test.
 * The plain peer must receive exactly the bytes the application wrote and nothing else, a plain
 * echo server (which reflects hadroNIO's own handshake) must echo exactly them, and servers that
 * speak first (banners) must be served at once. With hadroNIO the connection stays on TCP.
 *
 * <p>Rows: provider x case. The figures are the time from connect to a banner's arrival and the
 * path each hadroNIO connection took.
 */
@RunWith(Parameterized.class)
public class PlainPeerTest {
    static final int SINK_BYTES = 64 << 20;
    static final int ECHO_BYTES = 16 << 20;

    @Parameters(name = "{0}-{1}")
    public static List<Object[]> parameters() {
        List<Object[]> rows = new ArrayList<>();
        for (Reliability.Provider provider : Reliability.Provider.values()) {
            for (String scenario : new String[] {"clientOfPlainSink", "clientOfPlainEcho", "clientOfBannerServer",
                    "clientOfServerThatClosesUnread",
                    "clientOfJdkEchoServer", "serverOfPlainClient", "bannerServerOfPlainClient"}) {
                rows.add(new Object[] {provider, scenario});
            }
        }
        return rows;
    }

    @Parameter(0)
    public Reliability.Provider provider;

    @Parameter(1)
    public String scenario;

    private final Resources resources = new Resources();

    @Rule
    public final TestRule rules = resources.withTimeout(120);

    @Rule
    public final TemporaryFolder folder = new TemporaryFolder();

    private String name() {
        return getClass().getSimpleName() + "[" + provider + "-" + scenario + "]";
    }

    @Test
    public void plainPeerSeesOnlyApplicationBytes() throws Exception {
        SelectorProvider sp = provider.get();
        switch (scenario) {
            case "clientOfPlainSink": {
                ChildJvm sink = python("sink");
                SocketChannel channel = connect(sp, sink);
                byte[] data = pattern(SINK_BYTES, 3);
                writeAll(channel, data);
                channel.shutdownOutput();
                String answer = readLine(channel);
                assertEquals("the plain server received exactly the application's bytes",
                        data.length + " " + crc(data), answer);
                assertEndOfStream(channel);
                reportPath(channel);
                break;
            }
            case "clientOfPlainEcho":
                echoThrough(connect(sp, python("echo")));
                break;
            case "clientOfJdkEchoServer": {
                ChildJvm server = resources.add(new ChildJvm.Builder("jdk-echo", EchoServerPeer.class)
                        .provider(Reliability.Provider.JDK).args("selector").start());
                SocketChannel channel = resources.add(sp.openSocketChannel());
                channel.connect(new InetSocketAddress("127.0.0.1", Integer.parseInt(server.awaitValue("PORT", 30))));
                echoThrough(channel);
                break;
            }
            case "clientOfBannerServer": {
                ChildJvm banner = python("banner");
                int port = Integer.parseInt(banner.awaitValue("PORT", 30));
                long start = System.nanoTime();
                SocketChannel channel = resources.add(sp.openSocketChannel());
                channel.connect(new InetSocketAddress("127.0.0.1", port));
                String line = readLine(channel);
                double millis = (System.nanoTime() - start) / 1e6;
                assertEquals("the server's banner", "220 plain banner", line.trim());
                Reliability.figure(name(), "connect to banner", millis, "ms");
                writeAll(channel, "ping\n".getBytes(StandardCharsets.US_ASCII));
                assertEquals("the echo after the banner", "ping", readLine(channel));
                channel.shutdownOutput();
                assertEndOfStream(channel);
                reportPath(channel);
                break;
            }
            case "clientOfServerThatClosesUnread": {
                // A server that says something and closes without reading (a refusal, a busy
                // server): its kernel resets the connection if its socket holds bytes nobody read,
                // so a client that only reads must have sent none, not even an offer.
                ChildJvm server = python("say-and-close");
                SocketChannel channel = connect(sp, server);
                assertEquals("the server's words", "421 plain goodbye", readLine(channel).trim());
                assertEndOfStream(channel);
                reportPath(channel);
                break;
            }
            case "serverOfPlainClient": {
                ServerSocketChannel server = resources.add(sp.openServerSocketChannel());
                server.bind(new InetSocketAddress("127.0.0.1", 0));
                ChildJvm client = python("client", port(server), ECHO_BYTES);
                SocketChannel channel = resources.add(Reliability.acceptWithin(server, client, 30));
                ByteBuffer buffer = ByteBuffer.allocateDirect(1 << 16);
                long echoed = 0;
                while (channel.read(buffer) >= 0) {
                    buffer.flip();
                    echoed += buffer.remaining();
                    while (buffer.hasRemaining()) {
                        channel.write(buffer);
                    }
                    buffer.clear();
                }
                channel.shutdownOutput();
                String result = client.awaitValue("OK", 60);
                byte[] expected = pythonPattern(ECHO_BYTES);
                assertEquals("the plain client got its bytes back\n" + client.output(),
                        expected.length + " " + crc(expected), result);
                assertEquals("the server read exactly the client's bytes", ECHO_BYTES, echoed);
                reportPath(channel);
                break;
            }
            case "bannerServerOfPlainClient": {
                ServerSocketChannel server = resources.add(sp.openServerSocketChannel());
                server.bind(new InetSocketAddress("127.0.0.1", 0));
                ChildJvm client = python("banner-client", port(server));
                SocketChannel channel = resources.add(Reliability.acceptWithin(server, client, 30));
                writeAll(channel, "220 hadronio banner\r\n".getBytes(StandardCharsets.US_ASCII));
                String request = readLine(channel);
                assertEquals("the plain client's request", "ping", request);
                writeAll(channel, "pong\n".getBytes(StandardCharsets.US_ASCII));
                String banner = client.awaitValue("BANNER", 30);
                assertEquals("the reply", "pong", client.awaitValue("REPLY", 30));
                String[] parts = banner.split(" ", 2);
                assertEquals("the banner as written", "220 hadronio banner", parts[1]);
                Reliability.figure(name(), "connect to banner (plain client)", Double.parseDouble(parts[0]), "ms");
                reportPath(channel);
                break;
            }
            default:
                throw new AssertionError(scenario);
        }
    }

    /** Writes {@link #ECHO_BYTES} while a second thread reads the echo; checks it byte for byte. */
    private void echoThrough(SocketChannel channel) throws Exception {
        byte[] data = pattern(ECHO_BYTES, 5);
        AtomicReference<Throwable> failure = new AtomicReference<>();
        Thread writer = new Thread(() -> {
            try {
                writeAll(channel, data);
                channel.shutdownOutput();
            } catch (Throwable e) {
                failure.set(e);
            }
        }, "plain-echo-writer");
        writer.setDaemon(true);
        writer.start();
        byte[] received = new byte[data.length];
        ByteBuffer buffer = ByteBuffer.wrap(received);
        while (buffer.hasRemaining()) {
            if (channel.read(buffer) < 0) {
                break;
            }
        }
        writer.join(30_000);
        if (failure.get() != null) {
            throw new AssertionError("writing to the echo server", failure.get());
        }
        assertEquals("echoed bytes", data.length, buffer.position());
        assertTrue("the echo is exactly the application's bytes", Arrays.equals(data, received));
        assertEndOfStream(channel);
        reportPath(channel);
    }

    private void reportPath(SocketChannel channel) throws IOException {
        if (provider == Reliability.Provider.HADRONIO) {
            String path = ((HadronioSocketChannel) channel).transportDescription();
            Reliability.figure(name(), "path", path, "");
            assertTrue("a connection to a plain peer stays on TCP: " + path, path.startsWith("tcp"));
        }
    }

    private ChildJvm python(Object... args) throws IOException {
        File script = new File(folder.getRoot(), "plain_peer.py");
        if (!script.exists()) {
            try (InputStream in = PlainPeerTest.class.getResourceAsStream("plain_peer.py")) {
                Files.copy(in, script.toPath(), StandardCopyOption.REPLACE_EXISTING);
            }
        }
        List<String> command = new ArrayList<>(Arrays.asList("python3", "-u", script.getPath()));
        for (Object arg : args) {
            command.add(String.valueOf(arg));
        }
        return resources.add(ChildJvm.startProgram("python-" + args[0], command));
    }

    private SocketChannel connect(SelectorProvider sp, ChildJvm server) throws Exception {
        SocketChannel channel = resources.add(sp.openSocketChannel());
        channel.connect(new InetSocketAddress("127.0.0.1", Integer.parseInt(server.awaitValue("PORT", 30))));
        return channel;
    }

    private static int port(ServerSocketChannel server) throws IOException {
        return ((InetSocketAddress) server.getLocalAddress()).getPort();
    }

    private static byte[] pattern(int length, long seed) {
        byte[] data = new byte[length];
        new Random(seed).nextBytes(data);
        return data;
    }

    /** The bytes of Python's {@code random.Random(7).randbytes(length)}, as the plain client sends. */
    private byte[] pythonPattern(int length) throws Exception {
        File file = folder.newFile("pattern.bin");
        Process process = new ProcessBuilder("python3", "-c",
                "import random,sys; sys.stdout.buffer.write(random.Random(7).randbytes(" + length + "))")
                .redirectOutput(file).start();
        assertEquals("python3 wrote the pattern", 0, process.waitFor());
        return Files.readAllBytes(file.toPath());
    }

    private static long crc(byte[] data) {
        CRC32 crc = new CRC32();
        crc.update(data);
        return crc.getValue();
    }

    private static void writeAll(SocketChannel channel, byte[] data) throws IOException {
        ByteBuffer buffer = ByteBuffer.wrap(data);
        while (buffer.hasRemaining()) {
            channel.write(buffer);
        }
    }

    /** One line (without its end), read a byte at a time so that nothing after it is consumed. */
    private static String readLine(SocketChannel channel) throws IOException {
        StringBuilder line = new StringBuilder();
        ByteBuffer one = ByteBuffer.allocate(1);
        while (true) {
            one.clear();
            if (channel.read(one) < 0) {
                throw new AssertionError("end of stream after '" + line + "'");
            }
            char c = (char) (one.get(0) & 0xff);
            if (c == '\n') {
                return line.toString().replace("\r", "");
            }
            line.append(c);
        }
    }

    private static void assertEndOfStream(SocketChannel channel) throws IOException {
        assertEquals("end of stream after the data", -1, channel.read(ByteBuffer.allocate(16)));
    }
}
