package dev.hadronio.examples.apps;

import io.netty.bootstrap.ServerBootstrap;
import io.netty.buffer.Unpooled;
import io.netty.channel.Channel;
import io.netty.channel.ChannelFutureListener;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInitializer;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.SimpleChannelInboundHandler;
import io.netty.channel.nio.NioEventLoopGroup;
import io.netty.channel.socket.SocketChannel;
import io.netty.channel.socket.nio.NioServerSocketChannel;
import io.netty.handler.codec.http.DefaultFullHttpResponse;
import io.netty.handler.codec.http.FullHttpRequest;
import io.netty.handler.codec.http.FullHttpResponse;
import io.netty.handler.codec.http.HttpHeaderNames;
import io.netty.handler.codec.http.HttpObjectAggregator;
import io.netty.handler.codec.http.HttpResponseStatus;
import io.netty.handler.codec.http.HttpServerCodec;
import io.netty.handler.codec.http.HttpUtil;
import io.netty.handler.codec.http.HttpVersion;
import java.net.InetSocketAddress;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.concurrent.Executors;
import java.util.function.Consumer;

/**
 * netty's HTTP server (NIO transport, one boss and two worker event loops) answering a small body,
 * with the JDK's {@code java.net.http.HttpClient} (HTTP/1.1) as the client.
 */
@SuppressWarnings("try") // close() of these resources may throw InterruptedException: callers let it through
final class NettyHttpApp implements App {
    static final byte[] BODY = "hello from netty".getBytes(StandardCharsets.US_ASCII);

    @Override
    public String name() {
        return "netty-http";
    }

    @Override
    public String request() {
        return "GET, 16 B body, JDK HttpClient";
    }

    @Override
    public Server serve(InetSocketAddress address) throws Exception {
        EventLoopGroup boss = new NioEventLoopGroup(1);
        EventLoopGroup workers = new NioEventLoopGroup(2);
        Channel channel = new ServerBootstrap()
                .group(boss, workers)
                .channel(NioServerSocketChannel.class)
                .childHandler(new ChannelInitializer<SocketChannel>() {
                    @Override
                    protected void initChannel(SocketChannel ch) {
                        ch.pipeline().addLast(new HttpServerCodec(), new HttpObjectAggregator(64 * 1024),
                                new SimpleChannelInboundHandler<FullHttpRequest>() {
                                    @Override
                                    protected void channelRead0(ChannelHandlerContext ctx, FullHttpRequest request) {
                                        FullHttpResponse response = new DefaultFullHttpResponse(HttpVersion.HTTP_1_1,
                                                HttpResponseStatus.OK, Unpooled.wrappedBuffer(BODY));
                                        response.headers().set(HttpHeaderNames.CONTENT_TYPE, "text/plain");
                                        response.headers().setInt(HttpHeaderNames.CONTENT_LENGTH, BODY.length);
                                        boolean keepAlive = HttpUtil.isKeepAlive(request);
                                        HttpUtil.setKeepAlive(response, keepAlive);
                                        if (keepAlive) {
                                            ctx.writeAndFlush(response);
                                        } else {
                                            ctx.writeAndFlush(response).addListener(ChannelFutureListener.CLOSE);
                                        }
                                    }
                                });
                    }
                })
                .bind(address).sync().channel();
        return new Server() {
            @Override
            public int port() {
                return ((InetSocketAddress) channel.localAddress()).getPort();
            }

            @Override
            public void close() throws Exception {
                channel.close().sync();
                boss.shutdownGracefully().sync();
                workers.shutdownGracefully().sync();
            }
        };
    }

    @Override
    public Client connect(InetSocketAddress address) {
        HttpClient client = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1)
                .executor(Executors.newFixedThreadPool(2, r -> {
                    Thread thread = new Thread(r, "netty-http-client");
                    thread.setDaemon(true);
                    return thread;
                })).build();
        HttpRequest request = HttpRequest.newBuilder(
                URI.create("http://" + address.getHostString() + ":" + address.getPort() + "/")).GET().build();
        return new Client() {
            @Override
            public void call() throws Exception {
                HttpResponse<byte[]> response = client.send(request, HttpResponse.BodyHandlers.ofByteArray());
                check(response.statusCode(), response.body());
            }

            @Override
            public boolean callAsync(Consumer<Throwable> done) {
                client.sendAsync(request, HttpResponse.BodyHandlers.ofByteArray()).whenComplete((response, failure) -> {
                    if (failure != null) {
                        done.accept(failure);
                        return;
                    }
                    try {
                        check(response.statusCode(), response.body());
                        done.accept(null);
                    } catch (RuntimeException e) {
                        done.accept(e);
                    }
                });
                return true;
            }

            @Override
            public void close() {
                // java.net.http.HttpClient closes with its last reference (close() is Java 21).
            }
        };
    }

    static void check(int status, byte[] body) {
        if (status != 200 || !Arrays.equals(body, BODY)) {
            throw new IllegalStateException("unexpected response: status " + status + ", " + body.length + " bytes");
        }
    }
}
