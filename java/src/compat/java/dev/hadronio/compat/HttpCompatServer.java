package dev.hadronio.compat;

import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;
import java.io.IOException;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * The server half of the HTTP compatibility bar: a {@code com.sun.net.httpserver.HttpServer} (whose
 * ServerSocketChannel and Selector come from the JVM-wide provider) with a thread-pool executor.
 *
 * <ul>
 *   <li>{@code GET /blob?size=N&seed=S} answers {@code N} pseudo-random bytes ({@link Payload}) with their
 *       CRC-32 in {@code X-Crc32};</li>
 *   <li>{@code POST /echo} checks the request body against its {@code X-Length} and {@code X-Crc32} headers
 *       (422 on mismatch) and sends it back with the CRC-32 it computed.</li>
 * </ul>
 * Every response carries {@code X-Peer}, the remote port of the request ({@link HttpExchange#getRemoteAddress()}),
 * which the client uses to assert keep-alive reuse; the server records every remote address too.
 *
 * <p>Prints {@code READY port=P}, serves until standard input ends (the supervisor's stop signal), then
 * prints its counts and exits 1 if any request body was wrong.
 */
public final class HttpCompatServer {
    private final AtomicInteger requests = new AtomicInteger();
    private final AtomicInteger bad = new AtomicInteger();
    private final AtomicInteger inFlight = new AtomicInteger();
    private final AtomicInteger maxInFlight = new AtomicInteger();
    private final List<InetSocketAddress> peers = new CopyOnWriteArrayList<>();

    private HttpCompatServer() {
    }

    public static void main(String[] args) throws IOException {
        CompatChild.start("http-server", false);
        new HttpCompatServer().run();
    }

    private void run() throws IOException {
        AtomicInteger threads = new AtomicInteger();
        ExecutorService executor = Executors.newFixedThreadPool(32, task -> {
            Thread thread = new Thread(task, "http-server-" + threads.incrementAndGet());
            thread.setDaemon(true);
            return thread;
        });
        HttpServer server = HttpServer.create(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), 128);
        server.setExecutor(executor);
        server.createContext("/blob", this::blob);
        server.createContext("/echo", this::echo);
        server.start();
        System.out.println("READY port=" + server.getAddress().getPort());
        System.out.flush();

        CompatChild.awaitStdinEof();
        server.stop(0);
        executor.shutdownNow();
        try {
            executor.awaitTermination(5, TimeUnit.SECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        Set<Integer> ports = new HashSet<>();
        for (InetSocketAddress peer : peers) {
            ports.add(peer.getPort());
        }
        System.out.println("http server: " + requests.get() + " requests from " + ports.size()
                + " connections, at most " + maxInFlight.get() + " in flight, " + bad.get() + " bad");
        System.out.flush();
        System.exit(bad.get() == 0 && requests.get() > 0 ? 0 : 1);
    }

    private void blob(HttpExchange exchange) throws IOException {
        enter(exchange);
        try {
            byte[] request = exchange.getRequestBody().readAllBytes();
            Map<String, String> query = query(exchange.getRequestURI().getRawQuery());
            if (!"GET".equals(exchange.getRequestMethod()) || request.length != 0
                    || !query.containsKey("size") || !query.containsKey("seed")) {
                reject(exchange, 400, "expected GET /blob?size=N&seed=S without a body");
                return;
            }
            byte[] body = Payload.random(Long.parseLong(query.get("seed")), Integer.parseInt(query.get("size")));
            respond(exchange, body);
        } catch (RuntimeException e) {
            reject(exchange, 500, e.toString());
        } finally {
            leave(exchange);
        }
    }

    private void echo(HttpExchange exchange) throws IOException {
        enter(exchange);
        try {
            byte[] body = exchange.getRequestBody().readAllBytes();
            String length = exchange.getRequestHeaders().getFirst("X-Length");
            String crc = exchange.getRequestHeaders().getFirst("X-Crc32");
            if (!"POST".equals(exchange.getRequestMethod()) || length == null || crc == null) {
                reject(exchange, 400, "expected POST /echo with X-Length and X-Crc32");
            } else if (Long.parseLong(length) != body.length || Long.parseLong(crc) != Payload.crc32(body)) {
                reject(exchange, 422, "request body damaged: got " + body.length + " bytes with CRC "
                        + Payload.crc32(body) + ", header says " + length + " bytes with CRC " + crc);
            } else {
                respond(exchange, body);
            }
        } catch (RuntimeException e) {
            reject(exchange, 500, e.toString());
        } finally {
            leave(exchange);
        }
    }

    private void enter(HttpExchange exchange) {
        requests.incrementAndGet();
        peers.add(exchange.getRemoteAddress());
        int now = inFlight.incrementAndGet();
        maxInFlight.accumulateAndGet(now, Math::max);
    }

    private void leave(HttpExchange exchange) {
        inFlight.decrementAndGet();
        exchange.close();
    }

    private static void respond(HttpExchange exchange, byte[] body) throws IOException {
        exchange.getResponseHeaders().set("X-Crc32", Long.toString(Payload.crc32(body)));
        exchange.getResponseHeaders().set("X-Peer", Integer.toString(exchange.getRemoteAddress().getPort()));
        exchange.sendResponseHeaders(200, body.length == 0 ? -1 : body.length);
        try (OutputStream out = exchange.getResponseBody()) {
            out.write(body);
        }
    }

    private void reject(HttpExchange exchange, int status, String message) throws IOException {
        bad.incrementAndGet();
        System.out.println("http server: " + exchange.getRequestMethod() + " " + exchange.getRequestURI() + " -> "
                + status + " " + message);
        byte[] body = message.getBytes(StandardCharsets.UTF_8);
        exchange.getResponseHeaders().set("X-Peer", Integer.toString(exchange.getRemoteAddress().getPort()));
        exchange.sendResponseHeaders(status, body.length);
        try (OutputStream out = exchange.getResponseBody()) {
            out.write(body);
        }
    }

    private static Map<String, String> query(String raw) {
        Map<String, String> result = new HashMap<>();
        if (raw != null) {
            for (String pair : raw.split("&")) {
                int eq = pair.indexOf('=');
                if (eq > 0) {
                    result.put(pair.substring(0, eq), pair.substring(eq + 1));
                }
            }
        }
        return result;
    }
}
