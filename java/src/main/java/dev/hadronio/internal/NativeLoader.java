package dev.hadronio.internal;

import java.io.IOException;
import java.io.InputStream;
import java.lang.System.Logger.Level;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.nio.file.StandardCopyOption;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;

/**
 * Loads {@code libhadronio.so} and, unless the system's UCX is requested, the UCX libraries and
 * transport modules the jar was built with. They are extracted once per content (a hash names the
 * directory) to a private directory under {@code java.io.tmpdir} and loaded from there in
 * dependency order, so nothing has to be on {@code LD_LIBRARY_PATH}.
 */
public final class NativeLoader {
    private static final String RESOURCES = "/dev/hadronio/native/linux-x86_64/";
    private static final String[] UCX_LIBRARIES = {"libucm.so.0", "libucs.so.0", "libuct.so.0", "libucp.so.0"};

    /** The oldest glibc the native code runs with (its newest versioned symbol). */
    public static final String GLIBC = "2.34";

    private static volatile boolean loaded;
    /** Why hadroNIO could not start (with its fix), if it could not. */
    private static volatile String problem;
    /** libhadronio.so is loaded (its JNI functions work), whether or not hadroNIO started. */
    private static volatile boolean libraryLoaded;

    private NativeLoader() {
    }

    /**
     * Starts hadroNIO ({@link #load()}); returns null if it runs. If it cannot start (the native
     * library or UCX does not load, a setting is invalid), returns the JDK's own provider to use
     * instead, after one warning naming the cause and its fix. With {@code hadronio.required=true},
     * or when the JDK's provider is out of reach, throws an error with that message instead.
     */
    public static java.nio.channels.spi.SelectorProvider startOrFallBack() {
        RuntimeException invalid = null;
        LinkageError broken = null;
        try {
            load();
            return null;
        } catch (ExceptionInInitializerError e) {
            // A setting Config rejected while it initialised.
            Throwable cause = e.getCause();
            if (cause instanceof RuntimeException) {
                invalid = (RuntimeException) cause;
            } else {
                broken = e;
            }
        } catch (RuntimeException e) {
            invalid = e;
        } catch (LinkageError e) {
            broken = e;
        }
        Throwable failure = invalid != null ? invalid : broken;
        String problem = String.valueOf(failure.getMessage());
        NativeLoader.problem = problem;
        if (Boolean.parseBoolean(System.getProperty(Config.REQUIRED))) {
            stop("hadroNIO cannot start (and " + Config.REQUIRED + "=true): " + problem, invalid, broken);
        }
        java.nio.channels.spi.SelectorProvider jdk = jdkProvider();
        if (jdk == null) {
            stop("hadroNIO cannot start: " + problem + "; the JDK's own provider, to fall back to, is out"
                    + " of reach without the native library: add --add-exports java.base/sun.nio.ch=ALL-UNNAMED"
                    + " to fall back", invalid, broken);
        }
        Log.logger().log(Level.WARNING, "hadroNIO is not in use; this JVM's channels and selectors are the JDK's own: "
                + problem + " (set " + Config.REQUIRED + "=true to fail instead)");
        return jdk;
    }

    /** Why hadroNIO could not start, with its fix; null if it started (or was not asked to). */
    public static String problem() {
        return problem;
    }

    /** Throws the error to stop with: the same kind as the failure, with its message first. */
    private static void stop(String message, RuntimeException invalid, LinkageError broken) {
        if (invalid != null) {
            throw new IllegalArgumentException(message, invalid);
        }
        UnsatisfiedLinkError error = new UnsatisfiedLinkError(message);
        error.initCause(broken);
        throw error;
    }

    /**
     * The JDK's own provider: through JNI once the native library is loaded (JNI is not subject to
     * the module system), else by reflection, which works when the JVM exports
     * {@code sun.nio.ch} to the class path; null if neither reaches it.
     */
    private static java.nio.channels.spi.SelectorProvider jdkProvider() {
        if (!libraryLoaded) {
            loadLibraryOnly();
        }
        if (libraryLoaded) {
            try {
                java.nio.channels.spi.SelectorProvider provider = Native.jdkSelectorProvider();
                if (provider != null) {
                    return provider;
                }
            } catch (RuntimeException | LinkageError e) {
                Log.logger().log(Level.DEBUG, () -> "the JDK's provider through JNI: " + e);
            }
        }
        try {
            Class<?> holder = Class.forName("sun.nio.ch.DefaultSelectorProvider");
            for (String name : new String[] {"get", "create"}) {
                try {
                    return (java.nio.channels.spi.SelectorProvider) holder.getMethod(name).invoke(null);
                } catch (NoSuchMethodException e) {
                    // the other JDK version's name
                }
            }
        } catch (ReflectiveOperationException | RuntimeException e) {
            Log.logger().log(Level.DEBUG, () -> "the JDK's provider by reflection: " + e);
        }
        return null;
    }

    /**
     * Loads libhadronio.so where {@link #load()} would, without the settings (one of them may be
     * what failed), so that its JNI functions can reach the JDK's provider.
     */
    private static void loadLibraryOnly() {
        try {
            boolean systemUcx;
            try {
                systemUcx = Config.systemUcxSetting();
            } catch (IllegalArgumentException e) {
                systemUcx = false;
            }
            String configured = Config.nativeDirectorySetting();
            Path directory = configured == null ? extract(systemUcx) : Paths.get(configured);
            loadFrom(directory, systemUcx);
        } catch (RuntimeException | LinkageError e) {
            Log.logger().log(Level.DEBUG, () -> "libhadronio.so for the fallback: " + e);
        }
    }

    /** Loads and initialises the native library once; throws with a clear message if it cannot. */
    public static void load() {
        if (loaded) {
            return;
        }
        synchronized (NativeLoader.class) {
            if (loaded) {
                return;
            }
            Config config = Config.get();
            for (String warning : Config.unknownProperties(System.getProperties())) {
                Log.logger().log(Level.WARNING, warning);
            }
            checkPlatform();
            Path directory = config.nativeDirectory() != null ? Paths.get(config.nativeDirectory()) : extract(config.systemUcx());
            loadFrom(directory, config.systemUcx());
            try {
                Native.init(config.values(), config.secret(), config.rules());
            } catch (IllegalStateException e) {
                throw new UnsatisfiedLinkError("hadroNIO cannot use the loaded UCX: " + e.getMessage());
            } catch (IllegalArgumentException e) {
                throw new IllegalArgumentException("invalid hadroNIO setting " + e.getMessage(), e);
            }
            loaded = true;
            Startup.begin();
        }
    }

    /**
     * What follows the library's load on the {@code hadronio-start} daemon thread, so that the
     * application's thread goes on: the way to direct buffer addresses without a native call
     * (milliseconds of method-handle set-up in a JVM that just started); then the counters'
     * MBean, once the JVM has an MBean server (it looks every {@link Counters#LOOK_MILLIS} ms).
     * The thread runs at a lower priority (the application's threads go first while the JVM
     * starts). A class rather than a lambda: a JVM that never bootstrapped one would spend
     * milliseconds on it here.
     */
    private static final class Startup implements Runnable {
        static void begin() {
            try {
                Thread thread = new Thread(new Startup(), "hadronio-start");
                thread.setDaemon(true);
                thread.start();
            } catch (OutOfMemoryError | SecurityException e) {
                // No thread to be had: addresses keep coming from the native library, no MBean.
            }
        }

        @Override
        public void run() {
            Native.yieldToApplication();
            Buffers.prepare();
            try {
                do {
                    Thread.sleep(Counters.LOOK_MILLIS);
                } while (!Counters.registerOnceServed());
            } catch (InterruptedException e) {
                // Nothing left to do.
            }
        }
    }

    private static void checkPlatform() {
        String os = System.getProperty("os.name", "").toLowerCase(Locale.ROOT);
        String arch = System.getProperty("os.arch", "").toLowerCase(Locale.ROOT);
        if (!os.contains("linux") || !(arch.equals("amd64") || arch.equals("x86_64"))) {
            throw new UnsatisfiedLinkError("hadroNIO supports linux-x86_64 only; this JVM runs on " + os + "-" + arch);
        }
    }

    private static void loadFrom(Path directory, boolean systemUcx) {
        List<String> order = new ArrayList<>();
        if (!systemUcx) {
            for (String library : UCX_LIBRARIES) {
                order.add(library);
            }
        }
        order.add("libhadronio.so");
        for (String library : order) {
            Path path = directory.resolve(library);
            if (!Files.isRegularFile(path)) {
                String hint = Config.nativeDirectorySetting() != null
                    ? " (" + Config.NATIVE_DIRECTORY + " names a directory without it)"
                    : systemUcx ? "" : " (rebuild the jar, or set " + Config.UCX_LIBRARY + "=system to use an installed UCX)";
                throw new UnsatisfiedLinkError("hadroNIO native library missing: " + path + hint);
            }
            try {
                System.load(path.toAbsolutePath().toString());
                if (library.equals("libhadronio.so")) {
                    libraryLoaded = true;
                }
            } catch (UnsatisfiedLinkError e) {
                String hint = systemUcx
                    ? "; with " + Config.UCX_LIBRARY + "=system, UCX >= 1.12 (libucp.so.0) must be installed and on the"
                        + " library path (LD_LIBRARY_PATH or ldconfig)"
                    : "";
                String reason = String.valueOf(e.getMessage());
                if (reason.contains("GLIBC_")) {
                    hint += "; hadroNIO's native code needs glibc " + GLIBC + " or newer";
                } else if (noexec(directory)) {
                    hint += "; " + directory + " is on a file system mounted noexec, where no code may be loaded: set"
                        + " java.io.tmpdir (or " + Config.NATIVE_DIRECTORY + ") to a directory on another one";
                }
                UnsatisfiedLinkError error = new UnsatisfiedLinkError("cannot load " + path + ": " + reason + hint);
                error.initCause(e);
                throw error;
            }
        }
    }

    /** Extracts the native files listed in the jar's index to a directory named by their hash. */
    private static Path extract(boolean systemUcx) {
        String index = resourceText(RESOURCES + "index.txt");
        List<String> files = new ArrayList<>();
        String hash = null;
        for (String line : index.split("\n")) {
            line = line.trim();
            if (line.startsWith("hash ")) {
                hash = line.substring(5).trim();
            } else if (!line.isEmpty() && !line.startsWith("#")) {
                if (systemUcx && !line.equals("libhadronio.so")) {
                    continue;
                }
                files.add(line);
            }
        }
        if (hash == null || files.isEmpty()) {
            throw new UnsatisfiedLinkError("the hadroNIO jar's native index is malformed");
        }
        String user = fileNamePart(System.getProperty("user.name", "user"));
        Path base = Paths.get(System.getProperty("java.io.tmpdir"), "hadronio-" + user);
        Path target = base.resolve(hash + (systemUcx ? "-system" : ""));
        if (Files.isRegularFile(target.resolve(".complete"))) {
            return target;
        }
        try {
            Files.createDirectories(base);
            try {
                Files.setPosixFilePermissions(base, PosixFilePermissions.fromString("rwx------"));
            } catch (IOException | UnsupportedOperationException ignored) {
                // not the owner (shared tmp directory of another user): the hash directory below is ours
            }
            Path staging = Files.createTempDirectory(base, hash + ".tmp");
            for (String file : files) {
                Path destination = staging.resolve(file);
                Files.createDirectories(destination.getParent());
                try (InputStream in = NativeLoader.class.getResourceAsStream(RESOURCES + file)) {
                    if (in == null) {
                        throw new UnsatisfiedLinkError("the hadroNIO jar lacks its native file " + file);
                    }
                    Files.copy(in, destination, StandardCopyOption.REPLACE_EXISTING);
                }
            }
            Files.write(staging.resolve(".complete"), hash.getBytes(StandardCharsets.UTF_8));
            try {
                Files.move(staging, target, StandardCopyOption.ATOMIC_MOVE);
            } catch (IOException e) {
                // Another JVM extracted the same files first (rename reports "directory not
                // empty" or "already exists"): use theirs.
                deleteTree(staging);
                if (!Files.isRegularFile(target.resolve(".complete"))) {
                    throw e;
                }
            }
            return target;
        } catch (IOException e) {
            UnsatisfiedLinkError error = new UnsatisfiedLinkError("cannot extract hadroNIO's native libraries to "
                + target + ": " + e + " (set java.io.tmpdir to a writable directory)");
            error.initCause(e);
            throw error;
        }
    }

    /**
     * {@code text} with every character but ASCII letters, digits, {@code _}, {@code .} and
     * {@code -} replaced by {@code _} (no regular expression: this runs while the provider loads).
     */
    static String fileNamePart(String text) {
        StringBuilder out = new StringBuilder(text.length());
        for (int i = 0; i < text.length(); i++) {
            char c = text.charAt(i);
            boolean plain = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9')
                || c == '_' || c == '.' || c == '-';
            out.append(plain ? c : '_');
        }
        return out.toString();
    }

    /** Whether {@code directory} lies on a mount with the {@code noexec} option (per /proc/self/mountinfo). */
    public static boolean noexec(Path directory) {
        try {
            String path = directory.toRealPath().toString();
            String best = "";
            boolean noexec = false;
            for (String line : Files.readAllLines(Paths.get("/proc/self/mountinfo"), StandardCharsets.UTF_8)) {
                String[] fields = line.split(" ");
                if (fields.length < 6) {
                    continue;
                }
                String mountPoint = fields[4].replace("\\040", " ");
                boolean contains = path.equals(mountPoint) || mountPoint.equals("/")
                    || path.startsWith(mountPoint.endsWith("/") ? mountPoint : mountPoint + "/");
                if (contains && mountPoint.length() >= best.length()) {
                    best = mountPoint;
                    noexec = java.util.Arrays.asList(fields[5].split(",")).contains("noexec");
                }
            }
            return noexec;
        } catch (IOException | RuntimeException e) {
            return false;
        }
    }

    private static String resourceText(String name) {
        try (InputStream in = NativeLoader.class.getResourceAsStream(name)) {
            if (in == null) {
                throw new UnsatisfiedLinkError("the hadroNIO jar has no native libraries (" + name + " is missing): "
                    + "build it with 'gradle jar', or set " + Config.NATIVE_DIRECTORY + " to a directory holding libhadronio.so");
            }
            return new String(in.readAllBytes(), StandardCharsets.UTF_8);
        } catch (IOException e) {
            throw new UnsatisfiedLinkError("cannot read " + name + ": " + e);
        }
    }

    private static void deleteTree(Path root) {
        try (java.util.stream.Stream<Path> paths = Files.walk(root)) {
            paths.sorted(java.util.Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
        } catch (IOException ignored) {
            // best effort: a leftover staging directory is harmless
        }
    }
}
