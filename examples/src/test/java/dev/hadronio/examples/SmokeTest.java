package dev.hadronio.examples;

import dev.hadronio.examples.bench.ResultRow;
import org.junit.Rule;
import org.junit.Test;
import org.junit.rules.TemporaryFolder;

import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.PrintStream;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertTrue;

/**
 * End-to-end runs of real commands in this JVM, server and client on two threads over loopback, on whatever
 * provider the test JVM has (the JDK's: the build does not set the provider property for tests).
 */
public class SmokeTest {

    @Rule
    public TemporaryFolder temp = new TemporaryFolder();

    @Test(timeout = 30_000)
    public void blockingCounter() throws Exception {
        String address = "127.0.0.1:" + freePort(1);
        Outputs o = runPair(new String[] {"blocking", "counter", "-s", "-a", address},
                new String[] {"blocking", "counter", "-r", address, "-m", "5000", "-l", "100", "-c", "2"});
        assertTrue(o.server, o.server.contains("Counting to 5000 on 2 connection(s), messages of 100 bytes"));
        assertTrue(o.server, o.server.contains("OK: every number arrived in order."));
        assertTrue(o.client, o.client.contains("OK: every number arrived in order."));
    }

    @Test(timeout = 30_000)
    public void nettyHello() throws Exception {
        String address = "127.0.0.1:" + freePort(1);
        Outputs o = runPair(new String[] {"netty", "hello", "-s", "-a", address},
                new String[] {"netty", "hello", "-r", address});
        assertTrue(o.server, o.server.contains("Received: Hello from the client"));
        assertTrue(o.client, o.client.contains("Server answered: Hello from the server"));
    }

    @Test(timeout = 60_000)
    public void tinyBenchInEveryFlavour() throws Exception {
        Path dir = temp.newFolder("result").toPath();
        Path description = temp.getRoot().toPath().resolve("tiny.json");
        Files.write(description, ("{\"resultName\": \"tiny\", \"parameters\": [{\"key\": \"connections\", "
                + "\"value\": \"2\"}], \"operations\": ["
                + "{\"name\": \"MessagingThroughput\", \"modes\": [\"unidirectional\", \"bidirectional\"],"
                + " \"iterations\": [{\"size\": 100, \"count\": 2000, \"warmUp\": 100}]},"
                + "{\"name\": \"MessagingPingPong\", \"modes\": [\"unidirectional\"],"
                + " \"iterations\": [{\"size\": 64, \"count\": 200, \"warmUp\": 20}]},"
                + "{\"name\": \"BulkTransfer\", \"modes\": [\"unidirectional\"],"
                + " \"iterations\": [{\"size\": 1048576, \"count\": 5, \"warmUp\": 1}]}]}")
                .getBytes(StandardCharsets.UTF_8));
        for (String flavour : new String[] {"blocking", "selector", "netty"}) {
            String address = "127.0.0.1:" + freePort(2);
            Outputs o = runPair(
                    new String[] {"bench", "-s", "-a", address, "-f", description.toString(), "-o", dir.toString(),
                        "--flavour", flavour, "--name", "JDK " + flavour},
                    new String[] {"bench", "-r", address, "-f", description.toString(), "--flavour", flavour});
            assertTrue(o.server, o.server.contains("[4/4] Bulk Transfer 1 MiB rep 1/1"));
            assertTrue(o.client, o.client.contains("Bench client finished 4 steps"));
        }
        List<ResultRow> rows = ResultRow.readDirectory(dir);
        assertEquals(3 * 4, rows.size());
        for (ResultRow r : rows) {
            double figure = r.isLatency() ? r.value("AverageLatency") : r.value("DataThroughput");
            assertTrue(r.operation + " " + r.benchmark + ": " + figure, figure > 0 && Double.isFinite(figure));
        }
        assertTrue(Files.size(dir.resolve("plot.png")) > 0);
    }

    private static final class Outputs {
        final String server;
        final String client;

        Outputs(String server, String client) {
            this.server = server;
            this.client = client;
        }
    }

    private static Outputs runPair(String[] serverArgs, String[] clientArgs) throws Exception {
        ExecutorService pool = Executors.newFixedThreadPool(2);
        try {
            ByteArrayOutputStream serverOut = new ByteArrayOutputStream();
            ByteArrayOutputStream clientOut = new ByteArrayOutputStream();
            Future<Integer> server = pool.submit(() -> run(serverArgs, serverOut));
            Future<Integer> client = pool.submit(() -> run(clientArgs, clientOut));
            int clientCode = client.get(50, TimeUnit.SECONDS);
            int serverCode = server.get(50, TimeUnit.SECONDS);
            String s = new String(serverOut.toByteArray(), StandardCharsets.UTF_8);
            String c = new String(clientOut.toByteArray(), StandardCharsets.UTF_8);
            assertEquals("server:\n" + s, 0, serverCode);
            assertEquals("client:\n" + c, 0, clientCode);
            return new Outputs(s, c);
        } finally {
            pool.shutdownNow();
        }
    }

    private static int run(String[] args, ByteArrayOutputStream sink) {
        PrintStream out = new PrintStream(sink, true);
        return Main.run(args, new ByteArrayInputStream(new byte[0]), out, out);
    }

    /** A loopback port with {@code n - 1} free neighbours above it. */
    private static int freePort(int n) throws IOException {
        for (int attempt = 0; attempt < 50; attempt++) {
            int p;
            try (ServerSocket s = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
                p = s.getLocalPort();
            }
            boolean ok = p + n - 1 <= 65535;
            for (int i = 1; ok && i < n; i++) {
                try {
                    new ServerSocket(p + i, 1, InetAddress.getLoopbackAddress()).close();
                } catch (IOException e) {
                    ok = false;
                }
            }
            if (ok) {
                return p;
            }
        }
        throw new IOException("no free ports");
    }
}
