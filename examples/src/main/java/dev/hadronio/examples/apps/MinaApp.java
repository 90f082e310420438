package dev.hadronio.examples.apps;

import java.io.IOException;
import java.net.InetSocketAddress;
import java.util.Queue;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.function.Consumer;
import org.apache.mina.core.buffer.IoBuffer;
import org.apache.mina.core.future.ConnectFuture;
import org.apache.mina.core.service.IoHandlerAdapter;
import org.apache.mina.core.session.IoSession;
import org.apache.mina.transport.socket.nio.NioSocketAcceptor;
import org.apache.mina.transport.socket.nio.NioSocketConnector;

/**
 * Apache MINA on both sides, echoing 64 B messages: the caller's thread writes
 * ({@code IoSession.write()}, which queues the message and wakes the I/O thread's selector with
 * {@code Selector.wakeup()}), MINA's I/O thread sends it and reads the echo, and the caller learns
 * of the reply through a future, as applications built on such frameworks do.
 */
final class MinaApp implements App {
    static final int SIZE = 64;
    private static final byte[] PAYLOAD = new byte[SIZE];

    static {
        for (int i = 0; i < SIZE; i++) {
            PAYLOAD[i] = (byte) ('a' + i % 26);
        }
    }

    @Override
    public String name() {
        return "mina";
    }

    @Override
    public String request() {
        return "64 B echo, caller writes, I/O thread sends";
    }

    @Override
    public Server serve(InetSocketAddress address) throws IOException {
        NioSocketAcceptor acceptor = new NioSocketAcceptor(2);
        acceptor.getSessionConfig().setTcpNoDelay(true);
        acceptor.setReuseAddress(true);
        acceptor.setHandler(new IoHandlerAdapter() {
            @Override
            public void messageReceived(IoSession session, Object message) {
                IoBuffer in = (IoBuffer) message;
                IoBuffer out = IoBuffer.allocate(in.remaining());
                out.put(in).flip();
                session.write(out);
            }

            @Override
            public void exceptionCaught(IoSession session, Throwable cause) {
                session.closeNow();
            }
        });
        acceptor.bind(address);
        return new Server() {
            @Override
            public int port() {
                return acceptor.getLocalAddress().getPort();
            }

            @Override
            public void close() {
                acceptor.unbind();
                acceptor.dispose(true);
            }
        };
    }

    @Override
    public Client connect(InetSocketAddress address) {
        Echoes echoes = new Echoes();
        NioSocketConnector connector = new NioSocketConnector(1);
        connector.getSessionConfig().setTcpNoDelay(true);
        connector.setHandler(echoes);
        ConnectFuture connecting = connector.connect(address).awaitUninterruptibly();
        if (!connecting.isConnected()) {
            connector.dispose(true);
            throw new IllegalStateException("MINA could not connect to " + address, connecting.getException());
        }
        IoSession session = connecting.getSession();
        return new Client() {
            @Override
            public void call() throws Exception {
                CompletableFuture<Void> reply = new CompletableFuture<>();
                send(failure -> {
                    if (failure == null) {
                        reply.complete(null);
                    } else {
                        reply.completeExceptionally(failure);
                    }
                });
                reply.get();
            }

            @Override
            public boolean callAsync(Consumer<Throwable> done) {
                send(done);
                return true;
            }

            private void send(Consumer<Throwable> done) {
                // Queued before the write: the echo may come back before write() returns.
                echoes.waiting.add(done);
                session.write(IoBuffer.wrap(PAYLOAD.clone()));
            }

            @Override
            public void close() {
                session.closeNow().awaitUninterruptibly();
                connector.dispose(true);
            }
        };
    }

    /**
     * The client's handler: matches the echoed bytes, in order, to the requests waiting for them
     * and checks each byte.
     */
    private static final class Echoes extends IoHandlerAdapter {
        final Queue<Consumer<Throwable>> waiting = new ConcurrentLinkedQueue<>();
        /** Bytes of the current reply already read (MINA's I/O thread only). */
        private int offset;

        @Override
        public void messageReceived(IoSession session, Object message) {
            IoBuffer in = (IoBuffer) message;
            while (in.hasRemaining()) {
                byte b = in.get();
                if (b != PAYLOAD[offset]) {
                    failAll(new IllegalStateException("unexpected byte " + b + " at offset " + offset + " of an echo"));
                    session.closeNow();
                    return;
                }
                if (++offset == SIZE) {
                    offset = 0;
                    Consumer<Throwable> done = waiting.poll();
                    if (done == null) {
                        session.closeNow();
                        throw new IllegalStateException("an echo came that no request waits for");
                    }
                    done.accept(null);
                }
            }
        }

        @Override
        public void exceptionCaught(IoSession session, Throwable cause) {
            failAll(cause);
            session.closeNow();
        }

        @Override
        public void sessionClosed(IoSession session) {
            failAll(new IOException("the MINA session closed"));
        }

        private void failAll(Throwable cause) {
            Consumer<Throwable> done;
            while ((done = waiting.poll()) != null) {
                done.accept(cause);
            }
        }
    }
}
