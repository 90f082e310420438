package dev.hadronio.examples.hosts;

import com.sun.net.httpserver.HttpServer;
import dev.hadronio.examples.util.OwnProcess;
import io.netty.bootstrap.ServerBootstrap;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.channel.ChannelInitializer;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.nio.NioEventLoopGroup;
import io.netty.channel.socket.nio.NioServerSocketChannel;
import java.io.BufferedReader;
import java.io.File;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.OutputStream;
import java.io.PrintStream;
import java.io.PrintWriter;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.ByteBuffer;
import java.nio.channels.SelectionKey;
import java.nio.channels.Selector;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.util.Iterator;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.Executors;
import org.apache.zookeeper.server.ServerCnxnFactory;
import org.apache.zookeeper.server.ZooKeeperServer;

/**
 * {@code hadronio hosts serve}: the servers the checks of another host talk to, on consecutive ports
 * from a base port, and a control connection over the JDK's own sockets ({@code java.net}, which
 * no selector provider touches) through which the checks ask what this side saw.
 *
 * <pre>
 * base      control: one command per line, one answer line each (see {@link #answer})
 * base + 1  echo, a thread per connection, blocking channels (reads into a 1 MiB direct buffer)
 * base + 2  echo, one selector thread, non-blocking channels
 * base + 3  netty echo (NIO transport)
 * base + 4  the JDK's HttpServer: /hello answers 16 bytes, /echo the request's body
 * base + 5  ZooKeeper 3.8, standalone
 * base + 6  sink: reads and counts, and remembers how each connection ended
 * </pre>
 */
final class HostServer {
    static final int CONTROL = 0;
    static final int BLOCKING_ECHO = 1;
    static final int SELECTOR_ECHO = 2;
    static final int NETTY_ECHO = 3;
    static final int HTTP = 4;
    static final int ZOOKEEPER = 5;
    static final int SINK = 6;

    static final byte[] HELLO = "hello from hosts".getBytes(StandardCharsets.US_ASCII);

    private final InetSocketAddress base;
    private final String powerOff;
    private final PrintStream out;
    /** Connections of the echo and sink servers by the peer's port, while open. */
    private final Map<Integer, SocketChannel> channels = new ConcurrentHashMap<>();
    /** What each sink connection received, and how it ended, by the peer's port. */
    private final Map<Integer, Sink> sinks = new ConcurrentHashMap<>();
    private final CountDownLatch quit = new CountDownLatch(1);

    HostServer(InetSocketAddress base, String powerOff, PrintStream out) {
        this.base = base;
        this.powerOff = powerOff;
        this.out = out;
    }

    private InetSocketAddress at(int offset) {
        return new InetSocketAddress(base.getAddress(), base.getPort() + offset);
    }

    /** Starts every server, then serves until a check says {@code quit}. */
    void run() throws Exception {
        ServerSocket control = new ServerSocket();
        control.setReuseAddress(true);
        control.bind(at(CONTROL));
        daemon("echo", () -> blockingEcho(ServerSocketChannel.open().bind(at(BLOCKING_ECHO), 1024)));
        ServerSocketChannel selectorListener = ServerSocketChannel.open().bind(at(SELECTOR_ECHO), 1024);
        daemon("selector-echo", () -> selectorEcho(selectorListener));
        EventLoopGroup netty = new NioEventLoopGroup(2);
        new ServerBootstrap().group(netty).channel(NioServerSocketChannel.class).childHandler(new ChannelInitializer<io.netty.channel.Channel>() {
            @Override
            protected void initChannel(io.netty.channel.Channel channel) {
                channel.pipeline().addLast(new ChannelInboundHandlerAdapter() {
                    @Override
                    public void channelRead(ChannelHandlerContext context, Object message) {
                        context.write(message);
                    }

                    @Override
                    public void channelReadComplete(ChannelHandlerContext context) {
                        context.flush();
                    }

                    @Override
                    public void exceptionCaught(ChannelHandlerContext context, Throwable cause) {
                        context.close();
                    }
                });
            }
        }).bind(at(NETTY_ECHO)).sync();
        HttpServer http = HttpServer.create(at(HTTP), 64);
        http.createContext("/hello", exchange -> {
            exchange.sendResponseHeaders(200, HELLO.length);
            try (OutputStream body = exchange.getResponseBody()) {
                body.write(HELLO);
            }
        });
        http.createContext("/echo", exchange -> {
            byte[] request = exchange.getRequestBody().readAllBytes();
            exchange.sendResponseHeaders(200, request.length == 0 ? -1 : request.length);
            try (OutputStream body = exchange.getResponseBody()) {
                body.write(request);
            }
        });
        http.setExecutor(Executors.newFixedThreadPool(4));
        http.start();
        System.setProperty("zookeeper.admin.enableServer", "false");
        System.setProperty("zookeeper.jmx.log4j.disable", "true");
        File data = Files.createTempDirectory("hadronio-hosts-zookeeper").toFile();
        ServerCnxnFactory zookeeper = ServerCnxnFactory.createFactory(at(ZOOKEEPER), 0);
        zookeeper.startup(new ZooKeeperServer(data, data, 2000));
        daemon("sink", () -> sink(ServerSocketChannel.open().bind(at(SINK), 1024)));
        daemon("control", () -> {
            while (true) {
                Socket socket = control.accept();
                daemon("control-connection", () -> control(socket));
            }
        });
        out.printf(Locale.ROOT, "hosts: serving on %s ports %d-%d (provider %s)%n", base.getAddress().getHostAddress(),
                base.getPort(), base.getPort() + SINK, java.nio.channels.spi.SelectorProvider.provider().getClass().getName());
        out.flush();
        quit.await();
        zookeeper.shutdown();
        http.stop(0);
        netty.shutdownGracefully();
        control.close();
    }

    /** A task that may throw. */
    interface Task {
        void run() throws Exception;
    }

    private void daemon(String name, Task task) {
        Thread thread = new Thread(() -> {
            try {
                task.run();
            } catch (Exception e) {
                out.println("hosts: " + name + " ended: " + e);
            }
        }, "hosts-" + name);
        thread.setDaemon(true);
        thread.start();
    }

    private static int peerPort(SocketChannel channel) throws IOException {
        return ((InetSocketAddress) channel.getRemoteAddress()).getPort();
    }

    private void blockingEcho(ServerSocketChannel listener) throws IOException {
        while (true) {
            SocketChannel channel = listener.accept();
            daemon("echo-connection", () -> {
                int port = peerPort(channel);
                channels.put(port, channel);
                ByteBuffer buffer = ByteBuffer.allocateDirect(1 << 20);
                try (SocketChannel c = channel) {
                    while (c.read(buffer) >= 0) {
                        buffer.flip();
                        while (buffer.hasRemaining()) {
                            c.write(buffer);
                        }
                        buffer.clear();
                    }
                } catch (IOException e) {
                    out.println("hosts: the echo connection from port " + port + " failed: " + e);
                } finally {
                    channels.remove(port);
                }
            });
        }
    }

    private void selectorEcho(ServerSocketChannel listener) throws IOException {
        Selector selector = Selector.open();
        listener.configureBlocking(false);
        listener.register(selector, SelectionKey.OP_ACCEPT);
        while (true) {
            selector.select();
            Iterator<SelectionKey> keys = selector.selectedKeys().iterator();
            while (keys.hasNext()) {
                SelectionKey key = keys.next();
                keys.remove();
                try {
                    if (key.isAcceptable()) {
                        SocketChannel channel = listener.accept();
                        if (channel != null) {
                            channel.configureBlocking(false);
                            channels.put(peerPort(channel), channel);
                            channel.register(selector, SelectionKey.OP_READ, new Echoing(peerPort(channel)));
                        }
                    } else {
                        ((Echoing) key.attachment()).ready(key);
                    }
                } catch (IOException e) {
                    Object attachment = key.attachment();
                    if (attachment instanceof Echoing) {
                        channels.remove(((Echoing) attachment).port);
                        out.println("hosts: the selector echo connection from port " + ((Echoing) attachment).port + " failed: " + e);
                    }
                    key.channel().close();
                }
            }
        }
    }

    /** One connection of the selector echo: reads while its buffer has room, writes what it holds. */
    private final class Echoing {
        final int port;
        final ByteBuffer buffer = ByteBuffer.allocateDirect(64 * 1024);
        boolean ended;

        Echoing(int port) {
            this.port = port;
        }

        void ready(SelectionKey key) throws IOException {
            SocketChannel channel = (SocketChannel) key.channel();
            if (key.isReadable() && !ended && buffer.hasRemaining()) {
                ended = channel.read(buffer) < 0;
            }
            buffer.flip();
            if (buffer.hasRemaining()) {
                channel.write(buffer);
            }
            buffer.compact();
            if (ended && buffer.position() == 0) {
                channels.remove(port);
                channel.close();
                return;
            }
            key.interestOps((buffer.position() > 0 ? SelectionKey.OP_WRITE : 0)
                    | (!ended && buffer.hasRemaining() ? SelectionKey.OP_READ : 0));
        }
    }

    /** What a sink connection received and how it ended. */
    static final class Sink {
        volatile long bytes;
        volatile String end;
    }

    private void sink(ServerSocketChannel listener) throws IOException {
        while (true) {
            SocketChannel channel = listener.accept();
            daemon("sink-connection", () -> {
                int port = peerPort(channel);
                Sink sink = new Sink();
                sinks.put(port, sink);
                channels.put(port, channel);
                ByteBuffer buffer = ByteBuffer.allocateDirect(1 << 20);
                try (SocketChannel c = channel) {
                    int n;
                    while ((n = c.read(buffer)) >= 0) {
                        sink.bytes += n;
                        buffer.clear();
                    }
                    sink.end = "eof";
                } catch (IOException e) {
                    sink.end = "IOException: " + e.getMessage();
                } finally {
                    channels.remove(port);
                }
            });
        }
    }

    private void control(Socket socket) throws IOException {
        try (Socket s = socket;
             BufferedReader in = new BufferedReader(new InputStreamReader(s.getInputStream(), StandardCharsets.UTF_8));
             PrintWriter reply = new PrintWriter(s.getOutputStream(), true, StandardCharsets.UTF_8)) {
            String line;
            while ((line = in.readLine()) != null) {
                String[] words = line.trim().split("\\s+");
                reply.println(answer(words));
                if (words[0].equals("quit")) {
                    quit.countDown();
                } else if (words[0].equals("poweroff") && powerOff != null) {
                    new ProcessBuilder("sh", "-c", powerOff).inheritIO().start();
                }
            }
        }
    }

    /**
     * The answer to one control command: {@code hello} (provider, whether this host may be powered
     * off), {@code path PORT} (the path of this side's connection from the peer's port PORT),
     * {@code sink PORT} (bytes received and, once it ended, how), {@code stats} (descriptors,
     * resident memory, RDMA queue pairs and memory regions of this process), {@code counters},
     * {@code poweroff}, {@code quit}.
     */
    private String answer(String[] words) {
        try {
            switch (words[0]) {
                case "hello":
                    return "hello provider=" + java.nio.channels.spi.SelectorProvider.provider().getClass().getName()
                            + " poweroff=" + (powerOff != null ? "yes" : "no");
                case "path": {
                    SocketChannel channel = channels.get(Integer.parseInt(words[1]));
                    return channel == null ? "none" : Hadronio.path(channel);
                }
                case "sink": {
                    Sink sink = sinks.get(Integer.parseInt(words[1]));
                    return sink == null ? "none" : "bytes " + sink.bytes + (sink.end == null ? " open" : " ended " + sink.end);
                }
                case "stats": {
                    System.gc();
                    long[] rdma = Kernel.rdmaResources();
                    return "fds " + OwnProcess.descriptors() + " rss " + OwnProcess.residentBytes() + " qps " + rdma[0]
                            + " mrs " + rdma[1] + " mrbytes " + rdma[2];
                }
                case "counters": {
                    StringBuilder text = new StringBuilder("counters");
                    Hadronio.counters().forEach((name, value) -> text.append(' ').append(name).append('=').append(value));
                    return text.toString();
                }
                case "poweroff":
                    return powerOff != null ? "ok" : "refused: started without --poweroff-command";
                case "quit":
                    return "ok";
                default:
                    return "unknown command " + words[0];
            }
        } catch (Exception e) {
            return "error " + e;
        }
    }
}
