package dev.hadronio.conformance;

import java.util.concurrent.Callable;
import java.util.concurrent.TimeUnit;

/**
 * A helper thread running one {@link Callable}; {@link #join()} waits a bounded time and hands back its
 * result or rethrows its failure, so that a test never hangs on, nor silently ignores, a helper.
 *
 * @param <T> the result type
 */
final class Background<T> {

    /** Longest wait in {@link #join()}; far above any expected duration, it only bounds a hang. */
    static final long JOIN_TIMEOUT_SECONDS = 45;

    private final Thread thread;
    private volatile boolean done;
    private volatile T result;
    private volatile Throwable failure;

    private Background(String name, Callable<T> body) {
        this.thread = new Thread(() -> {
            try {
                result = body.call();
            } catch (Throwable t) {
                failure = t;
            } finally {
                done = true;
            }
        }, name);
        this.thread.setDaemon(true);
    }

    /** Starts {@code body} in a new daemon thread called {@code name}. */
    static <T> Background<T> start(String name, Callable<T> body) {
        Background<T> background = new Background<>(name, body);
        background.thread.start();
        return background;
    }

    Thread thread() {
        return thread;
    }

    String name() {
        return thread.getName();
    }

    boolean isDone() {
        return done;
    }

    /** Waits up to {@code timeout} for the thread to end, without taking its result. */
    void awaitDone(long timeout, TimeUnit unit) throws InterruptedException {
        thread.join(unit.toMillis(timeout));
    }

    /**
     * Waits for the thread and returns its result.
     *
     * @throws AssertionError if it did not finish in time or threw (the throwable is the cause)
     */
    T join() throws InterruptedException {
        awaitTermination();
        Throwable t = failure;
        if (t != null) {
            throw new AssertionError("thread '" + name() + "' failed: " + t, t);
        }
        return result;
    }

    /**
     * Waits for the thread and returns what it threw.
     *
     * @throws AssertionError if it did not finish in time or returned normally
     */
    Throwable joinFailure() throws InterruptedException {
        awaitTermination();
        Throwable t = failure;
        if (t == null) {
            throw new AssertionError("thread '" + name() + "' was expected to throw but returned " + result);
        }
        return t;
    }

    private void awaitTermination() throws InterruptedException {
        thread.join(TimeUnit.SECONDS.toMillis(JOIN_TIMEOUT_SECONDS));
        if (thread.isAlive()) {
            AssertionError error = new AssertionError("thread '" + name() + "' did not finish within "
                    + JOIN_TIMEOUT_SECONDS + " s; its stack is attached");
            Throwable stack = new Throwable("stack of '" + name() + "'");
            stack.setStackTrace(thread.getStackTrace());
            error.initCause(stack);
            throw error;
        }
    }

    /** Best effort for cleanup: interrupts a thread still running and waits a little for it. */
    void stopQuietly() {
        if (thread.isAlive()) {
            thread.interrupt();
            try {
                thread.join(TimeUnit.SECONDS.toMillis(5));
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
    }
}
