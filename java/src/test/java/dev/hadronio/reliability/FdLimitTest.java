package dev.hadronio.reliability;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertTrue;

import java.io.IOException;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.SelectionKey;
import java.nio.channels.Selector;
import java.nio.channels.SocketChannel;
import java.nio.channels.spi.SelectorProvider;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import org.junit.Rule;
import org.junit.Test;
import org.junit.rules.TestRule;
import org.junit.runner.RunWith;
import org.junit.runners.Parameterized;
import org.junit.runners.Parameterized.Parameter;
import org.junit.runners.Parameterized.Parameters;

/**
 * A selector server at its file descriptor limit. The server ({@link FdLimitServer}, a child JVM
 * under {@code ulimit -n 256}) gets 1,000 clients at once, more than it can accept: it must serve as
 * many as its descriptors allow, see the served clients close, free their descriptors, go on to
 * serve every waiting client, and then serve new ones. Both providers run it; the figures are the
 * clients served while all 1,000 stay connected and the time until all are served.
 */
@RunWith(Parameterized.class)
public class FdLimitTest {
    static final int FD_LIMIT = 256;
    static final int CLIENTS = 1000;
    static final int LATE_CLIENTS = 50;

    @Parameters(name = "{0}")
    public static List<Object[]> parameters() {
        List<Object[]> rows = new ArrayList<>();
        for (Reliability.Provider provider : Reliability.Provider.values()) {
            rows.add(new Object[] {provider});
        }
        return rows;
    }

    @Parameter(0)
    public Reliability.Provider provider;

    private final Resources resources = new Resources();

    @Rule
    public final TestRule rules = resources.withTimeout(480);

    /** One client: its channel and the reply read so far. */
    static final class Client {
        final int id;
        final SocketChannel channel;
        final ByteBuffer reply = ByteBuffer.allocate(4);

        Client(int id, SocketChannel channel) {
            this.id = id;
            this.channel = channel;
        }
    }

    @Test
    public void serverAtTheLimitServesAndRecovers() throws Exception {
        serveAtTheLimit();
    }

    private void serveAtTheLimit() throws Exception {
        String name = getClass().getSimpleName() + "[" + provider + "]";
        SelectorProvider sp = provider.get();
        ChildJvm server = resources.add(new ChildJvm.Builder("server", FdLimitServer.class).provider(provider)
                .prefix("sh", "-c", "ulimit -n " + FD_LIMIT + " && exec \"$@\"", "fd-limit")
                .env("HADRONIO_LOG", "info").start());
        InetSocketAddress address = new InetSocketAddress("127.0.0.1", Integer.parseInt(server.awaitValue("PORT", 30)));
        Selector selector = resources.add(sp.openSelector());

        for (int i = 0; i < CLIENTS; i++) {
            connect(sp, selector, address, i);
        }
        System.out.println(name + ": " + CLIENTS + " clients connecting");

        // While every client stays connected, the server serves what its descriptors allow.
        List<Client> served = new ArrayList<>();
        collect(server, selector, served, 20_000, 3_000, false);
        int servedAtLimit = served.size();
        Reliability.figure(name, "served while " + CLIENTS + " clients stay connected", servedAtLimit, "clients");
        assertTrue("the server at its descriptor limit serves some clients (" + servedAtLimit + ")\n" + stats(server),
                servedAtLimit > 0);
        assertTrue("more clients than descriptors: not all are served at once (" + servedAtLimit + ")",
                servedAtLimit < CLIENTS);

        // The served clients close; the server must see it, free the descriptors and serve the rest.
        long start = System.nanoTime();
        for (Client client : served) {
            client.channel.close();
        }
        List<Client> rest = new ArrayList<>();
        collect(server, selector, rest, 120_000, 120_000, true);
        double millis = (System.nanoTime() - start) / 1e6;
        assertEquals("every waiting client is served once the first ones closed\n" + stats(server),
                CLIENTS - servedAtLimit, rest.size());
        Reliability.figure(name, "all " + CLIENTS + " served after the first closed", millis, "ms");

        // New clients are served as well.
        List<Client> late = new ArrayList<>();
        for (int i = 0; i < LATE_CLIENTS; i++) {
            connect(sp, selector, address, CLIENTS + i);
        }
        collect(server, selector, late, 30_000, 30_000, true);
        assertEquals("new clients are served after the recovery\n" + stats(server), LATE_CLIENTS, late.size());
        Reliability.figure(name, "new clients served after the recovery", late.size(), "of " + LATE_CLIENTS);
    }

    /** A non-blocking client connecting through {@code selector}; it sends its request once connected. */
    private Client connect(SelectorProvider sp, Selector selector, InetSocketAddress address, int id)
            throws IOException {
        SocketChannel channel = resources.add(sp.openSocketChannel());
        channel.configureBlocking(false);
        Client client = new Client(id, channel);
        SelectionKey key = channel.register(selector, SelectionKey.OP_CONNECT, client);
        if (channel.connect(address)) {
            sendRequest(key);
        }
        return client;
    }

    private static void sendRequest(SelectionKey key) throws IOException {
        Client client = (Client) key.attachment();
        ByteBuffer request = ByteBuffer.allocate(4).putInt(client.id);
        request.flip();
        while (request.hasRemaining()) {
            client.channel.write(request);
        }
        key.interestOps(SelectionKey.OP_READ);
    }

    /**
     * Completes connections and sends their requests, and reads replies into {@code served} until {@code limitMillis} passed, or (once some came)
     * {@code quietMillis} passed without one, or every registered client has its reply. A reply
     * must be the client's own id; with {@code close}, a served client is closed at once.
     */
    private static void collect(ChildJvm server, Selector selector, List<Client> served, long limitMillis,
            long quietMillis, boolean close) throws IOException {
        long end = System.nanoTime() + limitMillis * 1_000_000;
        long last = System.nanoTime();
        long lastReport = last;
        while (System.nanoTime() < end && (served.isEmpty() || System.nanoTime() - last < quietMillis * 1_000_000)) {
            if (selector.keys().stream().noneMatch(k -> k.isValid() && k.interestOps() != 0)) {
                return;
            }
            selector.select(100);
            Iterator<SelectionKey> keys = selector.selectedKeys().iterator();
            while (keys.hasNext()) {
                SelectionKey key = keys.next();
                keys.remove();
                Client client = (Client) key.attachment();
                if (key.isConnectable()) {
                    try {
                        if (client.channel.finishConnect()) {
                            sendRequest(key);
                        }
                    } catch (IOException e) {
                        throw new AssertionError("client " + client.id + ": " + e + "\n" + stats(server), e);
                    }
                    continue;
                }
                int n;
                try {
                    n = client.channel.read(client.reply);
                } catch (IOException e) {
                    throw new AssertionError("client " + client.id + ": " + e + "\n" + stats(server), e);
                }
                assertTrue("client " + client.id + ": the server closed before replying", n >= 0);
                if (!client.reply.hasRemaining()) {
                    assertEquals("client " + client.id + " gets its own request back", client.id,
                            client.reply.getInt(0));
                    key.interestOps(0);
                    served.add(client);
                    last = System.nanoTime();
                    if (close) {
                        client.channel.close();
                    }
                }
            }
            if (System.nanoTime() - lastReport > 2_000_000_000L) {
                lastReport = System.nanoTime();
                System.out.println("  " + served.size() + " served so far");
            }
        }
    }

    /** The server's last counts and its last warnings and failures (it logs at info). */
    private static String stats(ChildJvm server) {
        List<ChildJvm.Line> lines = server.all("STATS");
        if (lines.isEmpty()) {
            return server.output();
        }
        StringBuilder text = new StringBuilder("server: ").append(lines.get(lines.size() - 1).text);
        List<String> problems = new ArrayList<>();
        for (ChildJvm.Line line : server.lines()) {
            if (line.text.contains("WARN") || line.text.contains("ERROR") || line.text.contains("fail")) {
                problems.add(line.text);
            }
        }
        for (String problem : problems.subList(Math.max(0, problems.size() - 20), problems.size())) {
            text.append("\n  ").append(problem);
        }
        return text.toString();
    }
}
