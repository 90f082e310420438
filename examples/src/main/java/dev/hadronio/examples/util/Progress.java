package dev.hadronio.examples.util;

import java.io.PrintStream;
import java.util.Locale;
import java.util.function.LongSupplier;

/**
 * Prints "label: 42% (420000 / 1000000)" about once a second while a long step runs; steps shorter than a second
 * print nothing. The step publishes its progress through a {@link LongSupplier} (e.g. an {@code AtomicLong}
 * updated with {@code lazySet}), so the measured loop pays nothing for it.
 */
public final class Progress implements AutoCloseable {

    private static final long INTERVAL_MILLIS = 1000;

    private final Thread ticker;
    private volatile boolean running = true;

    private Progress(String label, long total, LongSupplier done, PrintStream out) {
        ticker = new Thread(() -> tick(label, total, done, out), "progress");
        ticker.setDaemon(true);
        ticker.start();
    }

    /** Starts reporting; close the returned object when the step ends. */
    public static Progress start(String label, long total, LongSupplier done, PrintStream out) {
        return new Progress(label, total, done, out);
    }

    private void tick(String label, long total, LongSupplier done, PrintStream out) {
        long start = System.nanoTime();
        while (running) {
            try {
                Thread.sleep(INTERVAL_MILLIS);
            } catch (InterruptedException e) {
                return;
            }
            if (!running) {
                return;
            }
            long n = done.getAsLong();
            double seconds = (System.nanoTime() - start) / 1e9;
            out.println(String.format(Locale.ROOT, "  %s: %3.0f%% (%d / %d) after %.0f s",
                    label, total == 0 ? 100.0 : 100.0 * n / total, n, total, seconds));
        }
    }

    @Override
    public void close() {
        running = false;
        ticker.interrupt();
    }
}
