package dev.hadronio.conformance;

import java.lang.reflect.InvocationTargetException;
import java.nio.channels.spi.SelectorProvider;
import java.util.ArrayList;
import java.util.List;

/**
 * The providers every conformance test runs against: {@code jdk}, the JDK's own provider (the oracle), and
 * {@code hadronio}, one shared {@link SelectorProvider} created by reflection from
 * {@code dev.hadronio.HadronioProvider}.
 *
 * <p>If the hadroNIO provider cannot be created, its parameter still exists and every test using it fails
 * with a message that says why; the system property {@code hadronio.conformance.jdkOnly=true} drops the
 * parameter instead, so that the suite can run against the JDK alone.
 */
public final class Providers {

    /** Class name of our provider. */
    static final String HADRONIO_PROVIDER_CLASS = "dev.hadronio.HadronioProvider";

    /** When {@code true}, only the {@code jdk} parameter is produced. */
    static final String JDK_ONLY_PROPERTY = "hadronio.conformance.jdkOnly";

    /** The JDK's provider; the test JVM never sets {@code java.nio.channels.spi.SelectorProvider}. */
    static final Target JDK = new Target("jdk", false);

    /** The hadroNIO provider, created on first use. */
    static final Target HADRONIO = new Target("hadronio", true);

    private Providers() {
    }

    /** Whether {@link #JDK_ONLY_PROPERTY} is set to {@code true}. */
    static boolean jdkOnly() {
        return Boolean.getBoolean(JDK_ONLY_PROPERTY);
    }

    /** The providers under test, in order: {@code jdk}, then {@code hadronio} unless {@link #jdkOnly()}. */
    static List<Target> all() {
        List<Target> providers = new ArrayList<>();
        providers.add(JDK);
        if (!jdkOnly()) {
            providers.add(HADRONIO);
        }
        return providers;
    }

    /** {@link #all()} as JUnit {@code Parameterized} rows of one element each. */
    static List<Object[]> parameters() {
        List<Object[]> rows = new ArrayList<>();
        for (Target provider : all()) {
            rows.add(new Object[] {provider});
        }
        return rows;
    }

    /** One provider under test; {@link #toString()} is its name and so appears in every test name. */
    public static final class Target {
        private final String name;
        private final boolean hadronio;

        private Target(String name, boolean hadronio) {
            this.name = name;
            this.hadronio = hadronio;
        }

        /** {@code true} for hadroNIO, {@code false} for the JDK's provider. */
        boolean isHadronio() {
            return hadronio;
        }

        /**
         * The provider instance.
         *
         * @throws AssertionError if this is the hadroNIO provider and it could not be created
         */
        SelectorProvider get() {
            if (!hadronio) {
                return SelectorProvider.provider();
            }
            HadronioHolder.check();
            return HadronioHolder.INSTANCE;
        }

        @Override
        public String toString() {
            return name;
        }
    }

    /** Creates the shared hadroNIO instance once (class initialisation is thread safe and runs once). */
    private static final class HadronioHolder {
        static final SelectorProvider INSTANCE;
        static final Throwable FAILURE;

        static {
            SelectorProvider instance = null;
            Throwable failure = null;
            try {
                Class<?> type = Class.forName(HADRONIO_PROVIDER_CLASS);
                instance = (SelectorProvider) type.getDeclaredConstructor().newInstance();
            } catch (InvocationTargetException e) {
                failure = e.getCause() != null ? e.getCause() : e;
            } catch (ReflectiveOperationException | LinkageError | ClassCastException | SecurityException e) {
                failure = e;
            }
            INSTANCE = instance;
            FAILURE = failure;
        }

        static void check() {
            if (FAILURE != null) {
                throw new AssertionError("cannot create the hadroNIO provider " + HADRONIO_PROVIDER_CLASS
                        + " (public no-arg constructor): " + FAILURE + ". Run with -D" + JDK_ONLY_PROPERTY
                        + "=true to test the JDK provider only.", FAILURE);
            }
        }
    }
}
