package dev.hadronio.compat;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.platform.engine.TestExecutionResult;
import org.junit.platform.engine.TestSource;
import org.junit.platform.engine.support.descriptor.ClassSource;
import org.junit.platform.engine.support.descriptor.MethodSource;
import org.junit.platform.launcher.TestExecutionListener;
import org.junit.platform.launcher.TestIdentifier;
import org.junit.platform.launcher.TestPlan;

/**
 * Prints the one-line result of the netty testsuite run,
 * {@code netty testsuite: N passed, N failed, N excluded}, each failure as it happens, and the slowest
 * test classes. Registered through {@code META-INF/services}; silent unless the system property
 * {@value #ENABLE_PROPERTY} is {@code true}. Also starts the {@link CompatChild} watchdogs, so that the
 * console launcher JVM cannot outlive its supervisor.
 *
 * <p>Counts are JUnit tests (each invocation of a parameterized method is one test) except the excluded
 * count, which counts excluded test methods, since the invocations of an excluded method never exist.
 * A failed container (for instance a test class whose static initializer throws) counts as a failure.
 */
public final class NettySummaryListener implements TestExecutionListener {
    static final String ENABLE_PROPERTY = "compat.netty.summary";
    /** Prefix of the summary line; the supervisor looks for it. */
    static final String SUMMARY_PREFIX = "netty testsuite: ";

    private final boolean enabled = Boolean.getBoolean(ENABLE_PROPERTY);
    private final AtomicInteger passed = new AtomicInteger();
    private final AtomicInteger failed = new AtomicInteger();
    private final AtomicInteger aborted = new AtomicInteger();
    private final AtomicInteger skipped = new AtomicInteger();
    private final Map<String, Long> classStarts = new ConcurrentHashMap<>();
    private final Map<String, Long> classNanos = new ConcurrentHashMap<>();
    private volatile TestPlan plan;
    private volatile long planStart;

    @Override
    public void testPlanExecutionStarted(TestPlan testPlan) {
        if (!enabled) {
            return;
        }
        CompatChild.start("netty-testsuite", true);
        NettyExcludes.get().report().forEach(System.out::println);
        plan = testPlan;
        planStart = System.nanoTime();
    }

    @Override
    public void executionStarted(TestIdentifier id) {
        if (enabled && isClass(id)) {
            classStarts.put(id.getUniqueId(), System.nanoTime());
        }
    }

    @Override
    public void executionSkipped(TestIdentifier id, String reason) {
        if (!enabled) {
            return;
        }
        long tests = id.isTest() ? 1 : plan.getDescendants(id).stream().filter(TestIdentifier::isTest).count();
        skipped.addAndGet((int) Math.max(tests, 1));
    }

    @Override
    public void executionFinished(TestIdentifier id, TestExecutionResult result) {
        if (!enabled) {
            return;
        }
        if (isClass(id)) {
            Long start = classStarts.remove(id.getUniqueId());
            if (start != null) {
                classNanos.put(simpleName(((ClassSource) id.getSource().get()).getClassName()),
                        System.nanoTime() - start);
            }
        }
        switch (result.getStatus()) {
            case SUCCESSFUL:
                if (id.isTest()) {
                    passed.incrementAndGet();
                }
                break;
            case ABORTED:
                if (id.isTest()) {
                    aborted.incrementAndGet();
                }
                break;
            case FAILED:
            default:
                failed.incrementAndGet();
                System.out.println("FAILED " + (id.isTest() ? "" : "(container) ") + describe(id) + ": "
                        + result.getThrowable().map(Throwable::toString).orElse("no exception"));
                break;
        }
    }

    @Override
    public void testPlanExecutionFinished(TestPlan testPlan) {
        if (!enabled) {
            return;
        }
        List<Map.Entry<String, Long>> slowest = new ArrayList<>(classNanos.entrySet());
        slowest.sort((a, b) -> Long.compare(b.getValue(), a.getValue()));
        StringBuilder top = new StringBuilder("slowest classes:");
        for (int i = 0; i < Math.min(6, slowest.size()); i++) {
            top.append(i == 0 ? " " : ", ").append(slowest.get(i).getKey())
                    .append(String.format(" %.1f s", slowest.get(i).getValue() / 1e9));
        }
        System.out.println(top);
        NettyExcludes excludes = NettyExcludes.get();
        System.out.println(String.format("netty testsuite run took %.1f s; %d skipped by netty itself "
                + "(@Disabled), %d aborted by netty's own assumptions",
                (System.nanoTime() - planStart) / 1e9, skipped.get(), aborted.get()));
        System.out.println(SUMMARY_PREFIX + passed.get() + " passed, " + failed.get() + " failed, "
                + excludes.excludedCount() + " excluded");
        System.out.flush();
    }

    private static boolean isClass(TestIdentifier id) {
        return id.getSource().filter(s -> s instanceof ClassSource).isPresent();
    }

    private static String describe(TestIdentifier id) {
        TestSource source = id.getSource().orElse(null);
        if (source instanceof MethodSource) {
            MethodSource method = (MethodSource) source;
            return simpleName(method.getClassName()) + "#" + method.getMethodName() + " [" + id.getDisplayName() + "]";
        }
        if (source instanceof ClassSource) {
            return simpleName(((ClassSource) source).getClassName());
        }
        return id.getDisplayName();
    }

    private static String simpleName(String className) {
        return className.substring(className.lastIndexOf('.') + 1);
    }
}
