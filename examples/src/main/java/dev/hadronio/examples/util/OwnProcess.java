package dev.hadronio.examples.util;

import java.io.File;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;

/** What the kernel says of this process ({@code /proc/self}). */
public final class OwnProcess {
    private static final Path STATUS = Paths.get("/proc/self/status");

    private OwnProcess() {
    }

    /** The value of {@code field} in {@code /proc/self/status} ("VmRSS" gives "1234 kB"), trimmed. */
    public static String status(String field) throws IOException {
        String prefix = field + ":";
        for (String line : Files.readAllLines(STATUS, StandardCharsets.UTF_8)) {
            if (line.startsWith(prefix)) {
                return line.substring(prefix.length()).trim();
            }
        }
        throw new IOException("no " + field + " in " + STATUS);
    }

    /** This process's resident memory (VmRSS) in bytes. */
    public static long residentBytes() throws IOException {
        return Long.parseLong(status("VmRSS").replaceAll("[^0-9]", "")) * 1024;
    }

    /** How many file descriptors this process has open, or -1. */
    public static int descriptors() {
        String[] entries = new File("/proc/self/fd").list();
        return entries == null ? -1 : entries.length;
    }
}
