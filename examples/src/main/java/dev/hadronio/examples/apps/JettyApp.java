package dev.hadronio.examples.apps;

import java.net.InetSocketAddress;
import java.net.URI;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.function.Consumer;
import org.eclipse.jetty.client.BufferingResponseListener;
import org.eclipse.jetty.client.ContentResponse;
import org.eclipse.jetty.client.HttpClient;
import org.eclipse.jetty.client.Result;
import org.eclipse.jetty.http.HttpHeader;
import org.eclipse.jetty.server.Handler;
import org.eclipse.jetty.server.Request;
import org.eclipse.jetty.server.Response;
import org.eclipse.jetty.server.ServerConnector;
import org.eclipse.jetty.util.Callback;

/**
 * Jetty 12: its server with a handler that answers a small body, and its HttpClient; either over
 * kept-alive connections, or with a new connection per request ({@code Connection: close}, as
 * clients without a connection pool and HTTP/1.0 clients use it).
 */
@SuppressWarnings("try") // close() of these resources may throw InterruptedException: callers let it through
final class JettyApp implements App {
    static final byte[] BODY = "hello from jetty".getBytes(StandardCharsets.US_ASCII);

    private final boolean closeEach;

    JettyApp(boolean closeEach) {
        this.closeEach = closeEach;
    }

    @Override
    public String name() {
        return closeEach ? "jetty-close" : "jetty";
    }

    @Override
    public String request() {
        return closeEach ? "GET, 16 B body, a new connection each (Connection: close)" : "GET, 16 B body";
    }

    @Override
    public Server serve(InetSocketAddress address) throws Exception {
        org.eclipse.jetty.server.Server server = new org.eclipse.jetty.server.Server();
        ServerConnector connector = new ServerConnector(server);
        connector.setHost(address.getHostString());
        connector.setPort(address.getPort());
        server.addConnector(connector);
        server.setHandler(new Handler.Abstract() {
            @Override
            public boolean handle(Request request, Response response, Callback callback) {
                response.setStatus(200);
                response.getHeaders().put(HttpHeader.CONTENT_TYPE, "text/plain");
                response.write(true, ByteBuffer.wrap(BODY), callback);
                return true;
            }
        });
        server.start();
        return new Server() {
            @Override
            public int port() {
                return connector.getLocalPort();
            }

            @Override
            public void close() throws Exception {
                server.stop();
            }
        };
    }

    @Override
    public Client connect(InetSocketAddress address) throws Exception {
        HttpClient client = new HttpClient();
        client.setMaxConnectionsPerDestination(64);
        client.start();
        URI uri = URI.create("http://" + address.getHostString() + ":" + address.getPort() + "/");
        return new Client() {
            private org.eclipse.jetty.client.Request newRequest() {
                org.eclipse.jetty.client.Request request = client.newRequest(uri);
                return closeEach ? request.headers(headers -> headers.put(HttpHeader.CONNECTION, "close")) : request;
            }

            @Override
            public void call() throws Exception {
                ContentResponse response = newRequest().send();
                check(response.getStatus(), response.getContent());
            }

            @Override
            public boolean callAsync(Consumer<Throwable> done) {
                newRequest().send(new BufferingResponseListener() {
                    @Override
                    public void onComplete(Result result) {
                        if (result.isFailed()) {
                            done.accept(result.getFailure());
                            return;
                        }
                        try {
                            check(result.getResponse().getStatus(), getContent());
                            done.accept(null);
                        } catch (Exception e) {
                            done.accept(e);
                        }
                    }
                });
                return true;
            }

            @Override
            public void close() throws Exception {
                client.stop();
            }
        };
    }

    static void check(int status, byte[] content) {
        if (status != 200 || !Arrays.equals(content, BODY)) {
            throw new IllegalStateException("unexpected response: status " + status + ", " + content.length + " bytes");
        }
    }
}
