package dev.hadronio.examples.transport;

import java.io.IOException;
import java.io.InterruptedIOException;
import java.util.concurrent.CountDownLatch;

/** A one-shot signal from an event loop to a waiting thread: done, or failed with an exception. */
final class Completion {

    private final CountDownLatch latch = new CountDownLatch(1);
    private volatile IOException failure;

    void succeed() {
        latch.countDown();
    }

    void fail(IOException cause) {
        if (failure == null) {
            failure = cause;
        }
        latch.countDown();
    }

    void await(String what) throws IOException {
        try {
            latch.await();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new InterruptedIOException("interrupted while waiting for " + what);
        }
        IOException cause = failure;
        if (cause != null) {
            throw new IOException(what + " failed: " + cause.getMessage(), cause);
        }
    }
}
