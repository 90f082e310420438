package dev.hadronio.compat;

import java.io.IOException;
import java.io.InputStream;
import java.nio.channels.spi.SelectorProvider;

/**
 * What every JVM started by {@link Supervisor} does first: report the {@link SelectorProvider} it really
 * runs on (the supervisor checks it against the one it asked for), and make sure it cannot outlive the
 * supervisor or its deadline even if the supervisor is killed with SIGKILL.
 */
final class CompatChild {
    /**
     * System property set by the supervisor: epoch milliseconds by which the scenario must be over. The
     * supervisor kills its children then; a child still alive {@link #BACKSTOP_MILLIS} later (its supervisor
     * died) halts itself.
     */
    static final String DEADLINE_PROPERTY = "compat.deadline";
    static final long BACKSTOP_MILLIS = 30_000;
    /** Prefix of the line that reports the provider; parsed by the supervisor. */
    static final String PROVIDER_LINE = "compat-provider: ";
    /** Exit status of a JVM that halted because its deadline passed. */
    static final int EXIT_DEADLINE = 124;
    /** Exit status of a JVM that halted because its supervisor went away. */
    static final int EXIT_ORPHANED = 125;

    private CompatChild() {
    }

    /**
     * Prints the provider line and starts the deadline watchdog. With {@code haltOnStdinEof} a second
     * watchdog halts the JVM when standard input ends, i.e. when the supervisor is gone; servers instead
     * use {@link #awaitStdinEof()} as their stop signal.
     */
    static void start(String role, boolean haltOnStdinEof) {
        System.out.println(PROVIDER_LINE + SelectorProvider.provider().getClass().getName());
        String deadline = System.getProperty(DEADLINE_PROPERTY);
        if (deadline != null) {
            long at = Long.parseLong(deadline) + BACKSTOP_MILLIS;
            daemon(role + "-deadline", () -> {
                long left;
                while ((left = at - System.currentTimeMillis()) > 0) {
                    try {
                        Thread.sleep(Math.min(left, 1000));
                    } catch (InterruptedException e) {
                        // keep watching: only the deadline ends this thread
                    }
                }
                System.out.println(role + ": deadline passed, halting");
                System.out.flush();
                Runtime.getRuntime().halt(EXIT_DEADLINE);
            });
        }
        if (haltOnStdinEof) {
            daemon(role + "-stdin", () -> {
                awaitStdinEof();
                System.out.println(role + ": supervisor went away (stdin closed), halting");
                System.out.flush();
                Runtime.getRuntime().halt(EXIT_ORPHANED);
            });
        }
    }

    /** Blocks until standard input ends (the supervisor closed it, or died). */
    static void awaitStdinEof() {
        byte[] sink = new byte[256];
        InputStream in = System.in;
        try {
            while (in.read(sink) >= 0) {
                // discard
            }
        } catch (IOException e) {
            // a broken pipe ends the wait just like EOF
        }
    }

    static Thread daemon(String name, Runnable body) {
        Thread thread = new Thread(body, name);
        thread.setDaemon(true);
        thread.start();
        return thread;
    }
}
