package dev.hadronio.internal;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.List;
import java.util.Locale;
import java.util.Properties;
import java.util.TreeSet;

/**
 * hadroNIO's configuration, read once from system properties and validated: a bad value is an
 * error naming the property, the value and the allowed range (the provider then falls back to the
 * JDK's own, or fails with {@code hadronio.required=true}).
 *
 * <table>
 * <caption>Properties</caption>
 * <tr><th>property</th><th>default</th><th>meaning</th></tr>
 * <tr><td>hadronio.slots</td><td>32</td><td>receive slots per connection (credits granted)</td></tr>
 * <tr><td>hadronio.slotLength</td><td>16384</td><td>bytes per receive slot (largest message)</td></tr>
 * <tr><td>hadronio.sendBufferLength</td><td>262144</td><td>bytes a connection may stage</td></tr>
 * <tr><td>hadronio.spinMicros</td><td>50</td><td>longest busy-poll before sleeping</td></tr>
 * <tr><td>hadronio.lingerMillis</td><td>30000</td><td>how long close keeps delivering data</td></tr>
 * <tr><td>hadronio.livenessMillis</td><td>30000</td><td>how long an upgraded connection may hear
 * nothing from the peer's host before it fails (0: the kernel's TCP defaults)</td></tr>
 * <tr><td>hadronio.spareWorkers</td><td>4</td><td>UCX workers of closed blocking channels kept
 * for reuse</td></tr>
 * <tr><td>hadronio.blockingWorkers</td><td>2 per core, 4..16</td><td>UCX workers the channels used
 * in blocking mode share at most (one each until there are that many)</td></tr>
 * <tr><td>hadronio.transport</td><td>ucx</td><td>{@code ucx} (upgrade) or {@code tcp} (never)</td></tr>
 * <tr><td>hadronio.ucx.library</td><td>bundled</td><td>{@code bundled} or {@code system} UCX</td></tr>
 * <tr><td>hadronio.native.directory</td><td></td><td>load the native libraries from here</td></tr>
 * <tr><td>hadronio.required</td><td>false</td><td>fail when hadroNIO cannot start, instead of
 * falling back to the JDK's own provider (read by {@link NativeLoader#startOrFallBack()})</td></tr>
 * <tr><td>hadronio.secret</td><td></td><td>shared secret both ends of an upgrade must prove
 * (also {@code HADRONIO_SECRET})</td></tr>
 * <tr><td>hadronio.offerMillis</td><td>200</td><td>with a secret: how long a client's bytes wait
 * for a hadroNIO server's answer to its offer before it treats the server as a plain one</td></tr>
 * <tr><td>hadronio.upgradeDelayMillis</td><td>20</td><td>a client starts the upgrade at its second
 * write, or this long after connecting if it wrote once (0: at once)</td></tr>
 * <tr><td>hadronio.rules</td><td></td><td>which connections may upgrade (checked natively; an
 * invalid rule stops the provider)</td></tr>
 * <tr><td>hadronio.softwareRdma</td><td>false</td><td>{@code true}: upgrade also where UCX reaches
 * the peer only through a software RDMA device (Soft-RoCE, soft-iWARP), slower than the kernel's
 * TCP</td></tr>
 * <tr><td>hadronio.sharedUpgradeBytes</td><td>65536</td><td>bytes a channel in blocking mode whose UCX
 * worker serves other channels too must have written or read before it upgrades to a peer on this
 * host (0: it upgrades as others do)</td></tr>
 * </table>
 *
 * <p>Other {@code hadronio.*} properties are reported with a warning that names the closest known
 * one (properties under {@code hadronio.test.}, {@code hadronio.reliability.} and
 * {@code hadronio.conformance.} belong to the test suites and are left alone).
 */
public final class Config {
    public static final String SLOTS = "hadronio.slots";
    public static final String SLOT_LENGTH = "hadronio.slotLength";
    public static final String SEND_BUFFER_LENGTH = "hadronio.sendBufferLength";
    public static final String SPIN_MICROS = "hadronio.spinMicros";
    public static final String LINGER_MILLIS = "hadronio.lingerMillis";
    public static final String LIVENESS_MILLIS = "hadronio.livenessMillis";
    public static final String SPARE_WORKERS = "hadronio.spareWorkers";
    public static final String BLOCKING_WORKERS = "hadronio.blockingWorkers";
    public static final String TRANSPORT = "hadronio.transport";
    public static final String UCX_LIBRARY = "hadronio.ucx.library";
    public static final String NATIVE_DIRECTORY = "hadronio.native.directory";
    public static final String SECRET = "hadronio.secret";
    public static final String OFFER_MILLIS = "hadronio.offerMillis";
    public static final String UPGRADE_DELAY_MILLIS = "hadronio.upgradeDelayMillis";
    public static final String RULES = "hadronio.rules";
    public static final String SOFTWARE_RDMA = "hadronio.softwareRdma";
    public static final String SHARED_UPGRADE_BYTES = "hadronio.sharedUpgradeBytes";
    public static final String REQUIRED = "hadronio.required";

    /** Every property this class reads. */
    static final List<String> KNOWN = Collections.unmodifiableList(Arrays.asList(SLOTS, SLOT_LENGTH,
            SEND_BUFFER_LENGTH, SPIN_MICROS, LINGER_MILLIS, LIVENESS_MILLIS, SPARE_WORKERS, BLOCKING_WORKERS, TRANSPORT,
            UCX_LIBRARY, NATIVE_DIRECTORY, SECRET, OFFER_MILLIS, UPGRADE_DELAY_MILLIS, RULES, REQUIRED, SOFTWARE_RDMA,
            SHARED_UPGRADE_BYTES));

    private static final List<String> FOREIGN_PREFIXES = Arrays.asList("hadronio.test.", "hadronio.reliability.",
            "hadronio.conformance.");

    /** Maximum length of a read or write buffer staged through temporary direct memory. */
    public static final int TEMPORARY_BUFFER_LIMIT = 1 << 20;

    final int slots;
    final int slotLength;
    final int sendBufferLength;
    final long spinNanos;
    final long lingerMillis;
    final long livenessMillis;
    final long spareWorkers;
    final long blockingWorkers;
    final long offerMillis;
    final long upgradeDelayMillis;
    final long sharedUpgradeBytes;
    final String rules;
    final boolean ucx;
    final boolean softwareRdma;
    final boolean ipv6;
    final boolean systemUcx;
    final String nativeDirectory;
    private final byte[] secret;

    private Config() {
        slots = (int) integer(SLOTS, 32, 2, 4096);
        slotLength = (int) integer(SLOT_LENGTH, 16384, 256, 16 << 20);
        sendBufferLength = (int) integer(SEND_BUFFER_LENGTH, 262144, 0, 1 << 30);
        spinNanos = integer(SPIN_MICROS, 50, 0, 10_000) * 1000;
        lingerMillis = integer(LINGER_MILLIS, 30_000, 0, 3_600_000);
        livenessMillis = integer(LIVENESS_MILLIS, 30_000, 0, 86_400_000);
        offerMillis = integer(OFFER_MILLIS, 200, 0, 60_000);
        upgradeDelayMillis = integer(UPGRADE_DELAY_MILLIS, 20, 0, 60_000);
        sharedUpgradeBytes = integer(SHARED_UPGRADE_BYTES, 65536, 0, 1 << 30);
        String rulesText = System.getProperty(RULES);
        rules = rulesText == null ? "" : rulesText;
        spareWorkers = integer(SPARE_WORKERS, 4, 0, 64);
        // 0: unset, the native side counts the cores (2 workers per core, 4..16).
        blockingWorkers = integer(BLOCKING_WORKERS, 0, 1, 4096);
        ucx = choice(TRANSPORT, "ucx", "ucx", "tcp").equals("ucx");
        softwareRdma = choice(SOFTWARE_RDMA, "false", "false", "true").equals("true");
        systemUcx = systemUcxSetting();
        ipv6 = !Boolean.getBoolean("java.net.preferIPv4Stack");
        nativeDirectory = nativeDirectorySetting();
        String shared = System.getProperty(SECRET);
        if (shared == null || shared.isEmpty()) {
            shared = System.getenv("HADRONIO_SECRET");
        }
        secret = shared == null || shared.isEmpty() ? null : shared.getBytes(java.nio.charset.StandardCharsets.UTF_8);
    }

    /** The rules text ({@code hadronio.rules}), empty if unset. */
    String rules() {
        return rules;
    }

    /**
     * One warning for each {@code hadronio.*} property in {@code properties} that hadroNIO does not
     * know (a misspelt setting would otherwise be ignored without a word), naming the closest
     * known one.
     */
    static List<String> unknownProperties(Properties properties) {
        List<String> warnings = new ArrayList<>();
        for (String name : new TreeSet<>(properties.stringPropertyNames())) {
            if (!name.startsWith("hadronio.") || KNOWN.contains(name)
                    || FOREIGN_PREFIXES.stream().anyMatch(name::startsWith)) {
                continue;
            }
            String closest = KNOWN.get(0);
            for (String known : KNOWN) {
                if (distance(name.toLowerCase(Locale.ROOT), known.toLowerCase(Locale.ROOT))
                        < distance(name.toLowerCase(Locale.ROOT), closest.toLowerCase(Locale.ROOT))) {
                    closest = known;
                }
            }
            warnings.add("unknown hadroNIO setting " + name + "=" + properties.getProperty(name)
                    + " is ignored; did you mean " + closest + "? (known: " + String.join(", ", KNOWN) + ")");
        }
        return warnings;
    }

    /** Edit distance (insertions, deletions, substitutions). */
    static int distance(String a, String b) {
        int[] previous = new int[b.length() + 1];
        int[] current = new int[b.length() + 1];
        for (int j = 0; j <= b.length(); j++) {
            previous[j] = j;
        }
        for (int i = 1; i <= a.length(); i++) {
            current[0] = i;
            for (int j = 1; j <= b.length(); j++) {
                int substitution = previous[j - 1] + (a.charAt(i - 1) == b.charAt(j - 1) ? 0 : 1);
                current[j] = Math.min(substitution, Math.min(previous[j], current[j - 1]) + 1);
            }
            int[] swap = previous;
            previous = current;
            current = swap;
        }
        return previous[b.length()];
    }

    /** The shared secret's bytes, or null. */
    byte[] secret() {
        return secret == null ? null : secret.clone();
    }

    private static final class Holder {
        static final Config INSTANCE = new Config();
    }

    /** The configuration; the first call reads and validates the properties. */
    public static Config get() {
        return Holder.INSTANCE;
    }

    /** {@code hadronio.spinMicros} in nanoseconds: the longest a waiting thread may busy-poll. */
    public long spinNanos() {
        return spinNanos;
    }

    public boolean systemUcx() {
        return systemUcx;
    }

    public String nativeDirectory() {
        return nativeDirectory;
    }

    /** The values handed to the native side. KEEP IN SYNC: native/src/config.rs (SETTING_NAMES). */
    long[] values() {
        return new long[] {
            slots, slotLength, sendBufferLength, spinNanos, lingerMillis, ucx ? 1 : 0, ipv6 ? 1 : 0, livenessMillis,
            spareWorkers, offerMillis, blockingWorkers, upgradeDelayMillis, softwareRdma ? 1 : 0, sharedUpgradeBytes
        };
    }

    static long integer(String property, long fallback, long min, long max) {
        String text = System.getProperty(property);
        if (text == null || text.trim().isEmpty()) {
            return fallback;
        }
        long value;
        try {
            value = Long.parseLong(text.trim());
        } catch (NumberFormatException e) {
            throw invalid(property, text, "an integer in " + min + ".." + max);
        }
        if (value < min || value > max) {
            throw invalid(property, text, "an integer in " + min + ".." + max);
        }
        return value;
    }

    /**
     * Whether {@code hadronio.ucx.library} (or {@code HADRONIO_UCX}) asks for the system's UCX; an
     * invalid value is an error. Read on its own (not through {@link #get()}) where the library must
     * be found although another setting is invalid.
     */
    static boolean systemUcxSetting() {
        String library = System.getenv("HADRONIO_UCX");
        return choice(UCX_LIBRARY, library == null ? "bundled" : library.toLowerCase(Locale.ROOT), "bundled", "system")
            .equals("system");
    }

    /** {@code hadronio.native.directory}, or null if unset (read on its own as above). */
    static String nativeDirectorySetting() {
        String directory = System.getProperty(NATIVE_DIRECTORY);
        return directory == null || directory.isEmpty() ? null : directory;
    }

    static String choice(String property, String fallback, String... allowed) {
        String text = System.getProperty(property);
        String value = text == null || text.trim().isEmpty() ? fallback : text.trim().toLowerCase(Locale.ROOT);
        for (String candidate : allowed) {
            if (candidate.equals(value)) {
                return value;
            }
        }
        throw invalid(property, text == null ? fallback : text, "one of " + String.join(", ", allowed));
    }

    private static IllegalArgumentException invalid(String property, String value, String expected) {
        return new IllegalArgumentException(
            "invalid hadroNIO setting " + property + "='" + value + "': expected " + expected);
    }
}
