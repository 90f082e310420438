package dev.hadronio.examples.apps;

import java.net.InetSocketAddress;
import java.util.function.Consumer;

/**
 * One application shape of {@code hadronio bench apps}: a server and a client built from a real
 * library (or written the way such applications are), each in a JVM of its own on the provider
 * under test.
 */
@SuppressWarnings("try") // close() of these resources may throw InterruptedException: callers let it through
interface App {
    /** The name on the command line and in the tables. */
    String name();

    /** What one request is, for the table. */
    String request();

    /** Starts the server on {@code address} (port 0: any); returns it running. */
    Server serve(InetSocketAddress address) throws Exception;

    /** A client of the server at {@code address}. */
    Client connect(InetSocketAddress address) throws Exception;

    /** Whether the app measures request round trips (true) or streams (see {@link StreamApp}). */
    default boolean requests() {
        return true;
    }

    /** Requests in flight in the throughput phase. */
    default int inFlight() {
        return 64;
    }

    /** Whether the client's threads are virtual threads. */
    default boolean virtualThreads() {
        return false;
    }

    /** The oldest JDK (feature release) both JVMs need. */
    default int minimumJdk() {
        return 11;
    }

    /** Releases what the app's clients share (after the last client closed). */
    default void release() {
    }

    /** A running server. */
    interface Server extends AutoCloseable {
        int port();
    }

    /** A client: requests one at a time, and (for the throughput phase) many at once. */
    interface Client extends AutoCloseable {
        /** One request, answered and checked. */
        void call() throws Exception;

        /**
         * Starts a request and returns at once; {@code done} gets null or the failure, on any
         * thread. Clients without an asynchronous API return false and are driven by several
         * threads, each with a client of its own ({@link #another()}).
         */
        default boolean callAsync(Consumer<Throwable> done) throws Exception {
            return false;
        }

        /** A further client with a connection of its own. */
        default Client another() throws Exception {
            throw new UnsupportedOperationException();
        }
    }
}
