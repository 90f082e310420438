package dev.hadronio.examples.compare;

import java.io.IOException;
import java.net.InetAddress;
import java.net.ServerSocket;

/** Loopback port helpers for the child processes. */
final class Ports {

    private static final int ATTEMPTS = 50;

    private Ports() {
    }

    /** A port p such that p and p + 1 were both free on loopback a moment ago (data and control). */
    static int freePair() throws IOException {
        for (int i = 0; i < ATTEMPTS; i++) {
            int p;
            try (ServerSocket s = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
                p = s.getLocalPort();
            }
            if (p < 65535 && isFree(p + 1)) {
                return p;
            }
        }
        throw new IOException("found no two free neighbouring ports on loopback");
    }

    private static boolean isFree(int port) {
        try {
            new ServerSocket(port, 1, InetAddress.getLoopbackAddress()).close();
            return true;
        } catch (IOException e) {
            return false;
        }
    }
}
