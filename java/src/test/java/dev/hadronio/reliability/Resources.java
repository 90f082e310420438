package dev.hadronio.reliability;

import java.util.ArrayDeque;
import java.util.Deque;
import java.util.concurrent.TimeUnit;
import org.junit.rules.ExternalResource;
import org.junit.rules.RuleChain;
import org.junit.rules.TestRule;
import org.junit.rules.Timeout;

/**
 * Closes what a test registered (children, channels, threads' resources) after it, in reverse
 * order, even when the test timed out: use {@link #withTimeout} so that this rule runs outside
 * JUnit's timeout (whose test thread may still be stuck).
 */
public final class Resources extends ExternalResource {
    private final Deque<AutoCloseable> items = new ArrayDeque<>();

    /** A rule chain: this rule around a timeout of {@code seconds} that reports stuck threads. */
    public TestRule withTimeout(long seconds) {
        return RuleChain.outerRule(this).around(
                Timeout.builder().withTimeout(seconds, TimeUnit.SECONDS).withLookingForStuckThread(true).build());
    }

    /** Registers {@code item} to be closed after the test; returns it. */
    public <T extends AutoCloseable> T add(T item) {
        synchronized (items) {
            items.push(item);
        }
        return item;
    }

    @Override
    protected void after() {
        closeAll();
    }

    /** Closes everything registered so far (most recent first), ignoring failures. */
    public void closeAll() {
        while (true) {
            AutoCloseable item;
            synchronized (items) {
                if (items.isEmpty()) {
                    return;
                }
                item = items.pop();
            }
            try {
                item.close();
            } catch (Exception | Error e) {
                System.out.println("(cleanup: " + item + ": " + e + ")");
            }
        }
    }
}
