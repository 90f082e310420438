package dev.hadronio.examples.transport;

import java.io.IOException;
import java.io.InterruptedIOException;
import java.net.ConnectException;
import java.net.InetSocketAddress;
import java.time.Duration;

/** Connects with retries, so that a client may be started before its server. */
public final class Connect {

    private static final long RETRY_MILLIS = 100;

    /** One connection attempt. */
    public interface Attempt<T> {
        T connect() throws IOException;
    }

    private Connect() {
    }

    /** Runs {@code attempt} until it succeeds or {@code patience} is over; only refusals are retried. */
    public static <T> T withRetry(InetSocketAddress remote, Duration patience, Attempt<T> attempt)
            throws IOException {
        long deadline = System.nanoTime() + patience.toNanos();
        boolean told = false;
        while (true) {
            try {
                return attempt.connect();
            } catch (ConnectException e) {
                if (System.nanoTime() - deadline > 0) {
                    ConnectException failure = new ConnectException("could not connect to " + remote + " within "
                            + patience.getSeconds() + " s: " + e.getMessage());
                    failure.initCause(e);
                    throw failure;
                }
                if (!told) {
                    System.err.println("Waiting for the server at " + remote + " ...");
                    told = true;
                }
                try {
                    Thread.sleep(RETRY_MILLIS);
                } catch (InterruptedException interrupted) {
                    Thread.currentThread().interrupt();
                    throw new InterruptedIOException("interrupted while connecting to " + remote);
                }
            }
        }
    }
}
