package dev.hadronio.internal;

import java.lang.invoke.MethodHandle;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.MethodType;

/**
 * Whether the current thread is a virtual thread (JDK 21 and later; never on older JDKs). The
 * library is compiled for Java 11, so {@code Thread.isVirtual()} is looked up once by name.
 */
public final class VirtualThreads {
    private static final MethodHandle IS_VIRTUAL = lookup();

    private VirtualThreads() {
    }

    private static MethodHandle lookup() {
        try {
            return MethodHandles.publicLookup().findVirtual(Thread.class, "isVirtual", MethodType.methodType(boolean.class));
        } catch (NoSuchMethodException | IllegalAccessException e) {
            return null;
        }
    }

    /** Whether the calling thread is virtual. */
    public static boolean current() {
        MethodHandle handle = IS_VIRTUAL;
        if (handle == null) {
            return false;
        }
        try {
            return (boolean) handle.invokeExact(Thread.currentThread());
        } catch (Throwable e) {
            return false;
        }
    }
}
