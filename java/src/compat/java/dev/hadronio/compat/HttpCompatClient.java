package dev.hadronio.compat;

import java.io.IOException;
import java.net.InetAddress;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;
import java.util.SplittableRandom;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

/**
 * The client half of the HTTP compatibility bar: {@code java.net.http.HttpClient} (HTTP/1.1, whose
 * SocketChannels and Selector come from the JVM-wide provider) against {@link HttpCompatServer}.
 *
 * <p>Checks, each printed as {@code PASS}/{@code FAIL}: GET and POST with 13-byte and 8 MiB bodies, verified
 * byte for byte and by CRC-32 in both directions; keep-alive (a dozen sequential requests of all kinds on
 * one client must all arrive from the same remote port); 32 concurrent {@code sendAsync} requests of
 * mixed kinds and sizes. Ends with {@code http compat: N passed, N failed}; exit status 1 on any failure.
 *
 * <p>Usage: {@code HttpCompatClient PORT}.
 */
public final class HttpCompatClient {
    private static final int SMALL = 13;
    private static final int LARGE = 8 << 20;
    private static final Duration REQUEST_TIMEOUT = Duration.ofSeconds(60);

    private final URI base;
    private int passed;
    private int failed;

    private HttpCompatClient(int port) {
        this.base = URI.create("http://" + InetAddress.getLoopbackAddress().getHostAddress() + ":" + port);
    }

    /** One check: returns a detail for the PASS line, or throws. */
    private interface Check {
        String run() throws Exception;
    }

    public static void main(String[] args) {
        CompatChild.start("http-client", true);
        HttpCompatClient client = new HttpCompatClient(Integer.parseInt(args[0]));
        client.runAll();
        System.out.println("http compat: " + client.passed + " passed, " + client.failed + " failed");
        System.out.flush();
        System.exit(client.failed == 0 && client.passed > 0 ? 0 : 1);
    }

    private void runAll() {
        HttpClient client = newClient();
        check("GET 13 B", () -> "peer " + get(client, SMALL, 1));
        check("GET 8 MiB", () -> "peer " + get(client, LARGE, 2));
        check("POST 13 B (echoed)", () -> "peer " + post(client, SMALL, 3));
        check("POST 8 MiB (echoed)", () -> "peer " + post(client, LARGE, 4));
        check("keep-alive: 12 sequential requests reuse one connection", this::keepAlive);
        check("32 concurrent sendAsync requests", this::concurrent);
    }

    private void check(String name, Check check) {
        long start = System.nanoTime();
        try {
            String detail = check.run();
            passed++;
            System.out.println(String.format("PASS %s (%s, %.0f ms)", name, detail, (System.nanoTime() - start) / 1e6));
        } catch (Exception | AssertionError e) {
            failed++;
            System.out.println("FAIL " + name + ": " + e);
            e.printStackTrace(System.out);
        }
        System.out.flush();
    }

    private static HttpClient newClient() {
        return HttpClient.newBuilder()
                .version(HttpClient.Version.HTTP_1_1)
                .connectTimeout(Duration.ofSeconds(10))
                .build();
    }

    private String keepAlive() throws IOException, InterruptedException {
        HttpClient client = newClient();
        Set<Integer> ports = new LinkedHashSet<>();
        for (int i = 0; i < 12; i++) {
            int size = i % 3 == 2 ? LARGE : SMALL + i;
            ports.add(i % 2 == 0 ? get(client, size, 100 + i) : post(client, size, 100 + i));
        }
        if (ports.size() != 1) {
            throw new AssertionError("12 sequential requests arrived from " + ports.size()
                    + " connections (remote ports " + ports + "), expected one kept-alive connection");
        }
        return "all from remote port " + ports.iterator().next();
    }

    private String concurrent() throws Exception {
        HttpClient client = newClient();
        SplittableRandom random = new SplittableRandom(32);
        List<CompletableFuture<Integer>> replies = new ArrayList<>();
        long bytes = 0;
        for (int i = 0; i < 32; i++) {
            int size = i % 8 == 0 ? LARGE : 1 + random.nextInt(1 << 20);
            long seed = 1000 + i;
            bytes += size;
            replies.add(i % 2 == 0 ? getAsync(client, size, seed) : postAsync(client, size, seed));
        }
        CompletableFuture.allOf(replies.toArray(new CompletableFuture<?>[0])).get(120, TimeUnit.SECONDS);
        Set<Integer> ports = new LinkedHashSet<>();
        for (CompletableFuture<Integer> reply : replies) {
            ports.add(reply.get());
        }
        if (ports.size() < 2) {
            throw new AssertionError("32 concurrent requests all used one connection: they did not run concurrently");
        }
        return bytes + " body bytes, " + ports.size() + " connections";
    }

    private int get(HttpClient client, int size, long seed) throws IOException, InterruptedException {
        return verifyGet(client.send(getRequest(size, seed), HttpResponse.BodyHandlers.ofByteArray()), size, seed);
    }

    private CompletableFuture<Integer> getAsync(HttpClient client, int size, long seed) {
        return client.sendAsync(getRequest(size, seed), HttpResponse.BodyHandlers.ofByteArray())
                .thenApply(response -> verifyGet(response, size, seed));
    }

    private HttpRequest getRequest(int size, long seed) {
        return HttpRequest.newBuilder(base.resolve("/blob?size=" + size + "&seed=" + seed))
                .timeout(REQUEST_TIMEOUT).GET().build();
    }

    private static int verifyGet(HttpResponse<byte[]> response, int size, long seed) {
        return verify("GET " + Payload.size(size) + " seed " + seed, response, Payload.random(seed, size));
    }

    private int post(HttpClient client, int size, long seed) throws IOException, InterruptedException {
        byte[] body = Payload.random(seed, size);
        return verify("POST " + Payload.size(size) + " seed " + seed,
                client.send(postRequest(body), HttpResponse.BodyHandlers.ofByteArray()), body);
    }

    private CompletableFuture<Integer> postAsync(HttpClient client, int size, long seed) {
        byte[] body = Payload.random(seed, size);
        return client.sendAsync(postRequest(body), HttpResponse.BodyHandlers.ofByteArray())
                .thenApply(response -> verify("POST " + Payload.size(size) + " seed " + seed, response, body));
    }

    private HttpRequest postRequest(byte[] body) {
        return HttpRequest.newBuilder(base.resolve("/echo"))
                .timeout(REQUEST_TIMEOUT)
                .header("X-Length", Integer.toString(body.length))
                .header("X-Crc32", Long.toString(Payload.crc32(body)))
                .POST(HttpRequest.BodyPublishers.ofByteArray(body))
                .build();
    }

    /** Checks status, body and the server's CRC header; returns the remote port the server saw. */
    private static int verify(String what, HttpResponse<byte[]> response, byte[] expected) {
        byte[] body = response.body();
        if (response.statusCode() != 200) {
            throw new AssertionError(what + ": status " + response.statusCode() + ": "
                    + new String(body, 0, Math.min(body.length, 300), StandardCharsets.UTF_8));
        }
        if (response.version() != HttpClient.Version.HTTP_1_1) {
            throw new AssertionError(what + ": response version " + response.version());
        }
        if (!Arrays.equals(body, expected)) {
            throw new AssertionError(what + ": body differs (" + body.length + " bytes received, "
                    + expected.length + " expected, first difference at " + Arrays.mismatch(body, expected) + ")");
        }
        String crc = response.headers().firstValue("X-Crc32").orElse("missing");
        if (!crc.equals(Long.toString(Payload.crc32(expected)))) {
            throw new AssertionError(what + ": server CRC " + crc + ", expected " + Payload.crc32(expected));
        }
        return Integer.parseInt(response.headers().firstValue("X-Peer").orElse("-1"));
    }
}
