package dev.hadronio.reliability;

import java.io.IOException;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.SelectionKey;
import java.nio.channels.Selector;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.util.Iterator;

/**
 * An echo server for {@link HostileClientTest}, serving any number of connections until killed. It
 * opens channels through {@code ServerSocketChannel.open()}, i.e. the JVM-wide provider.
 *
 * <pre>
 * EchoServerPeer blocking   accept loop, one thread per connection
 * EchoServerPeer selector   one thread and one selector for the listener and every connection
 * </pre>
 *
 * Binds 127.0.0.1 on an ephemeral port and prints {@code PORT <port>}; then for each connection
 * {@code ACCEPTED <peer port> <path>} and, when it ends, {@code CLOSED <peer port> EOF} or
 * {@code CLOSED <peer port> ERROR <exception>} (the channel is closed then). An unexpected failure
 * of the server itself prints {@code SERVER-DIED <throwable>}. It exits when its stdin ends (the test
 * JVM is gone).
 */
public final class EchoServerPeer {
    private EchoServerPeer() {
    }

    public static void main(String[] args) throws Exception {
        LinkPeer.exitWithParent();
        boolean selector = args[0].equals("selector");
        ServerSocketChannel server = ServerSocketChannel.open();
        server.bind(new InetSocketAddress("127.0.0.1", 0));
        LinkPeer.say("PORT " + ((InetSocketAddress) server.getLocalAddress()).getPort());
        try {
            if (selector) {
                viaSelector(server);
            } else {
                while (true) {
                    SocketChannel channel = server.accept();
                    Thread thread = new Thread(() -> serveBlocking(channel), "echo-" + peerPort(channel));
                    thread.setDaemon(true);
                    thread.start();
                }
            }
        } catch (Throwable t) {
            LinkPeer.say("SERVER-DIED " + t);
            throw t;
        }
    }

    static int peerPort(SocketChannel channel) {
        try {
            return ((InetSocketAddress) channel.getRemoteAddress()).getPort();
        } catch (IOException | RuntimeException e) {
            return -1;
        }
    }

    static String path(SocketChannel channel) {
        try {
            return LinkPeer.path(channel);
        } catch (IOException e) {
            return "(" + e + ")";
        }
    }

    static void serveBlocking(SocketChannel channel) {
        int port = peerPort(channel);
        LinkPeer.say("ACCEPTED " + port + " " + path(channel));
        ByteBuffer buffer = ByteBuffer.allocateDirect(64 * 1024);
        String end;
        try {
            while (true) {
                buffer.clear();
                if (channel.read(buffer) < 0) {
                    end = "EOF";
                    break;
                }
                buffer.flip();
                while (buffer.hasRemaining()) {
                    channel.write(buffer);
                }
            }
        } catch (IOException e) {
            end = "ERROR " + e;
        } catch (RuntimeException e) {
            end = "UNEXPECTED " + e;
        }
        try {
            channel.close();
        } catch (IOException e) {
            // closing after a failure
        }
        LinkPeer.say("CLOSED " + port + " " + end);
    }

    /** Per connection: its port and the bytes read but not yet echoed. */
    static final class Connection {
        final int port;
        final ByteBuffer pending = ByteBuffer.allocateDirect(64 * 1024);

        Connection(int port) {
            this.port = port;
        }
    }

    static void viaSelector(ServerSocketChannel server) throws IOException {
        Selector selector = server.provider().openSelector();
        server.configureBlocking(false);
        server.register(selector, SelectionKey.OP_ACCEPT);
        while (true) {
            selector.select();
            Iterator<SelectionKey> keys = selector.selectedKeys().iterator();
            while (keys.hasNext()) {
                SelectionKey key = keys.next();
                keys.remove();
                if (!key.isValid()) {
                    continue;
                }
                if (key.isAcceptable()) {
                    SocketChannel channel;
                    while ((channel = server.accept()) != null) {
                        channel.configureBlocking(false);
                        Connection connection = new Connection(peerPort(channel));
                        channel.register(selector, SelectionKey.OP_READ, connection);
                        LinkPeer.say("ACCEPTED " + connection.port + " " + path(channel));
                    }
                    continue;
                }
                SocketChannel channel = (SocketChannel) key.channel();
                Connection connection = (Connection) key.attachment();
                String end = null;
                try {
                    ByteBuffer pending = connection.pending;
                    if (pending.position() == 0) {
                        int n = channel.read(pending);
                        if (n < 0) {
                            end = "EOF";
                        }
                    }
                    if (end == null) {
                        pending.flip();
                        channel.write(pending);
                        pending.compact();
                        key.interestOps(pending.position() > 0 ? SelectionKey.OP_WRITE : SelectionKey.OP_READ);
                    }
                } catch (IOException e) {
                    end = "ERROR " + e;
                }
                if (end != null) {
                    key.cancel();
                    channel.close();
                    LinkPeer.say("CLOSED " + connection.port + " " + end);
                }
            }
        }
    }
}
