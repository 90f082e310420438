package dev.hadronio.examples.apps;

import java.io.EOFException;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.SelectionKey;
import java.nio.channels.Selector;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.util.ArrayDeque;
import java.util.Iterator;
import java.util.Queue;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;

/**
 * The server shape of ZooKeeper and Kafka, written with java.nio alone: one selector thread does
 * all network I/O and hands each complete request to a pool of 4 worker threads; a worker queues
 * the reply and wakes the selector, which writes it. Requests are {@code [length: int][payload]};
 * the reply echoes the payload. Clients are blocking threads, one connection each.
 */
@SuppressWarnings("try") // close() of these resources may throw InterruptedException: callers let it through
final class WorkerPoolApp implements App {
    static final int PAYLOAD = 64;
    static final int WORKERS = 4;

    @Override
    public String name() {
        return "worker-pool";
    }

    @Override
    public String request() {
        return "64 B request, selector thread + 4 workers";
    }

    @Override
    public Server serve(InetSocketAddress address) throws Exception {
        PoolServer server = new PoolServer(address);
        Thread thread = new Thread(server, "worker-pool-selector");
        thread.setDaemon(true);
        thread.start();
        return server;
    }

    /** A connection's buffers: the request being read, replies waiting to be written. */
    static final class Connection {
        final SocketChannel channel;
        final ByteBuffer in = ByteBuffer.allocateDirect(64 * 1024);
        final Queue<ByteBuffer> out = new ArrayDeque<>();

        Connection(SocketChannel channel) {
            this.channel = channel;
        }
    }

    static final class PoolServer implements Server, Runnable {
        final Selector selector;
        final ServerSocketChannel listener;
        final ExecutorService workers = Executors.newFixedThreadPool(WORKERS, r -> {
            Thread thread = new Thread(r, "worker-pool-worker");
            thread.setDaemon(true);
            return thread;
        });
        final ConcurrentLinkedQueue<Connection> replies = new ConcurrentLinkedQueue<>();
        volatile boolean stopped;

        PoolServer(InetSocketAddress address) throws IOException {
            selector = Selector.open();
            listener = ServerSocketChannel.open();
            listener.bind(address, 1024);
            listener.configureBlocking(false);
            listener.register(selector, SelectionKey.OP_ACCEPT);
        }

        @Override
        public int port() {
            return ((InetSocketAddress) listener.socket().getLocalSocketAddress()).getPort();
        }

        @Override
        public void run() {
            try {
                while (!stopped) {
                    selector.select();
                    Iterator<SelectionKey> keys = selector.selectedKeys().iterator();
                    while (keys.hasNext()) {
                        SelectionKey key = keys.next();
                        keys.remove();
                        try {
                            handle(key);
                        } catch (IOException e) {
                            key.cancel();
                            key.channel().close();
                        }
                    }
                    Connection connection;
                    while ((connection = replies.poll()) != null) {
                        SelectionKey key = connection.channel.keyFor(selector);
                        if (key != null && key.isValid()) {
                            try {
                                flush(connection, key);
                            } catch (IOException e) {
                                key.cancel();
                                connection.channel.close();
                            }
                        }
                    }
                }
            } catch (IOException e) {
                if (!stopped) {
                    System.err.println("worker-pool server: " + e);
                }
            }
        }

        private void handle(SelectionKey key) throws IOException {
            if (key.isAcceptable()) {
                SocketChannel channel;
                while ((channel = listener.accept()) != null) {
                    channel.configureBlocking(false);
                    channel.register(selector, SelectionKey.OP_READ, new Connection(channel));
                }
                return;
            }
            Connection connection = (Connection) key.attachment();
            if (key.isWritable()) {
                flush(connection, key);
            }
            if (key.isValid() && key.isReadable()) {
                if (connection.channel.read(connection.in) < 0) {
                    throw new EOFException();
                }
                ByteBuffer in = connection.in;
                in.flip();
                while (in.remaining() >= 4 && in.remaining() >= 4 + in.getInt(in.position())) {
                    int length = in.getInt();
                    byte[] request = new byte[length];
                    in.get(request);
                    workers.execute(() -> reply(connection, request));
                }
                in.compact();
            }
        }

        /** On a worker: computes the reply (the payload back) and hands it to the selector thread. */
        private void reply(Connection connection, byte[] request) {
            ByteBuffer reply = ByteBuffer.allocate(4 + request.length);
            reply.putInt(request.length).put(request).flip();
            synchronized (connection) {
                connection.out.add(reply);
            }
            replies.add(connection);
            selector.wakeup();
        }

        private void flush(Connection connection, SelectionKey key) throws IOException {
            synchronized (connection) {
                while (!connection.out.isEmpty()) {
                    ByteBuffer head = connection.out.peek();
                    connection.channel.write(head);
                    if (head.hasRemaining()) {
                        key.interestOps(SelectionKey.OP_READ | SelectionKey.OP_WRITE);
                        return;
                    }
                    connection.out.poll();
                }
            }
            key.interestOps(SelectionKey.OP_READ);
        }

        @Override
        public void close() throws Exception {
            stopped = true;
            selector.wakeup();
            workers.shutdownNow();
            workers.awaitTermination(5, TimeUnit.SECONDS);
            listener.close();
        }
    }

    @Override
    public Client connect(InetSocketAddress address) throws IOException {
        return new BlockingClient(address);
    }

    /** A blocking client on a connection of its own. */
    static final class BlockingClient implements Client {
        final InetSocketAddress address;
        final SocketChannel channel;
        final ByteBuffer request = ByteBuffer.allocateDirect(4 + PAYLOAD);
        final ByteBuffer reply = ByteBuffer.allocateDirect(4 + PAYLOAD);
        byte sequence;

        BlockingClient(InetSocketAddress address) throws IOException {
            this.address = address;
            this.channel = SocketChannel.open(address);
        }

        @Override
        public void call() throws IOException {
            sequence++;
            request.clear();
            request.putInt(PAYLOAD);
            for (int i = 0; i < PAYLOAD; i++) {
                request.put(sequence);
            }
            request.flip();
            while (request.hasRemaining()) {
                channel.write(request);
            }
            reply.clear();
            while (reply.hasRemaining()) {
                if (channel.read(reply) < 0) {
                    throw new EOFException("the server closed");
                }
            }
            if (reply.getInt(0) != PAYLOAD || reply.get(4) != sequence || reply.get(3 + PAYLOAD) != sequence) {
                throw new IllegalStateException("unexpected reply");
            }
        }

        @Override
        public Client another() throws IOException {
            return new BlockingClient(address);
        }

        @Override
        public void close() throws IOException {
            channel.close();
        }
    }
}
