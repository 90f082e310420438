package dev.hadronio.internal;

import java.lang.System.Logger;

/**
 * hadroNIO's {@code System.Logger} ("dev.hadronio"), created when something is first logged: the
 * JDK's default backend starts {@code java.util.logging} (about ten milliseconds of a JVM's
 * start), which an application that logs through another framework never pays otherwise.
 */
public final class Log {
    private Log() {
    }

    private static final class Holder {
        static final Logger LOGGER = System.getLogger("dev.hadronio");
    }

    /** The logger. */
    public static Logger logger() {
        return Holder.LOGGER;
    }
}
