package dev.hadronio.examples.util;

import java.io.IOException;
import java.io.InterruptedIOException;
import java.util.ArrayList;
import java.util.List;

/** Runs a task on several threads at once and reports the first failure, if any. */
public final class Parallel {

    /** Task {@code index} of {@code n}. */
    public interface Task {
        void run(int index) throws Exception;
    }

    private Parallel() {
    }

    /** Runs {@code task(0) .. task(n - 1)} on threads named {@code name-i} and waits for all of them. */
    public static void run(String name, int n, Task task) throws IOException {
        List<Thread> threads = new ArrayList<>(n);
        Throwable[] failures = new Throwable[n];
        for (int i = 0; i < n; i++) {
            int index = i;
            Thread t = new Thread(() -> {
                try {
                    task.run(index);
                } catch (Throwable e) {
                    failures[index] = e;
                }
            }, name + "-" + i);
            threads.add(t);
            t.start();
        }
        try {
            for (Thread t : threads) {
                t.join();
            }
        } catch (InterruptedException e) {
            for (Thread t : threads) {
                t.interrupt();
            }
            Thread.currentThread().interrupt();
            throw new InterruptedIOException("interrupted while waiting for " + name + " threads");
        }
        for (int i = 0; i < n; i++) {
            Throwable failure = failures[i];
            if (failure != null) {
                throw failure instanceof IOException
                        ? new IOException(name + " " + i + ": " + failure.getMessage(), failure)
                        : new IOException(name + " " + i + " failed: " + failure, failure);
            }
        }
    }
}
