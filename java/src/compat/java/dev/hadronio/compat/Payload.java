package dev.hadronio.compat;

import java.util.SplittableRandom;
import java.util.zip.CRC32;

/** Deterministic pseudo-random bodies and their CRC-32, so that both ends can check every byte. */
final class Payload {
    private Payload() {
    }

    /** {@code size} pseudo-random bytes; equal seeds and sizes give equal bytes in every JVM. */
    static byte[] random(long seed, int size) {
        byte[] bytes = new byte[size];
        new SplittableRandom(seed).nextBytes(bytes);
        return bytes;
    }

    static long crc32(byte[] bytes) {
        CRC32 crc = new CRC32();
        crc.update(bytes, 0, bytes.length);
        return crc.getValue();
    }

    /** A size for humans: 13 B, 64 KiB, 8 MiB. */
    static String size(long bytes) {
        if (bytes >= (1 << 20) && bytes % (1 << 20) == 0) {
            return bytes / (1 << 20) + " MiB";
        }
        if (bytes >= 1024 && bytes % 1024 == 0) {
            return bytes / 1024 + " KiB";
        }
        return bytes + " B";
    }
}
