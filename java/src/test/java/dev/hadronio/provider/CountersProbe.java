package dev.hadronio.provider;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.nio.charset.StandardCharsets;

/**
 * A child program on hadroNIO: over one connection inside this JVM, echoes single bytes until the
 * connection went over to UCX (a blocking channel takes its worker on the {@code hadronio-lanes}
 * thread while its first bytes go over TCP; prints {@code WARMUP <bytes>}), then echoes
 * {@code args[0]} bytes, prints {@code PID <pid>} and {@code READY}, and waits for a line on
 * standard input before it exits (while another JVM reads its counters).
 */
public final class CountersProbe {
    private CountersProbe() {
    }

    public static void main(String[] args) throws Exception {
        int total = Integer.parseInt(args[0]);
        try (ServerSocketChannel server = ServerSocketChannel.open()) {
            server.bind(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0));
            Thread echo = new Thread(() -> {
                try (SocketChannel accepted = server.accept()) {
                    ByteBuffer buffer = ByteBuffer.allocateDirect(64 * 1024);
                    while (accepted.read(buffer) >= 0) {
                        buffer.flip();
                        while (buffer.hasRemaining()) {
                            accepted.write(buffer);
                        }
                        buffer.clear();
                    }
                } catch (Exception e) {
                    System.out.println("FAILED echo " + e);
                }
            }, "echo");
            echo.start();
            try (SocketChannel client = SocketChannel.open(server.getLocalAddress())) {
                ByteBuffer out = ByteBuffer.allocateDirect(64 * 1024);
                ByteBuffer in = ByteBuffer.allocateDirect(64 * 1024);
                long warmUp = 0;
                long deadline = System.nanoTime() + 30_000_000_000L;
                while (!dev.hadronio.HadronioProvider.transportOf(client).startsWith("ucx") && System.nanoTime() < deadline) {
                    out.clear();
                    out.limit(1);
                    while (out.hasRemaining()) {
                        client.write(out);
                    }
                    in.clear();
                    in.limit(1);
                    while (in.hasRemaining()) {
                        if (client.read(in) < 0) {
                            throw new java.io.EOFException("echo ended after " + warmUp + " bytes");
                        }
                    }
                    warmUp++;
                }
                System.out.println("WARMUP " + warmUp);
                long sent = 0;
                long received = 0;
                while (received < total) {
                    if (sent < total) {
                        out.clear();
                        out.limit((int) Math.min(out.capacity(), total - sent));
                        while (out.hasRemaining()) {
                            sent += client.write(out);
                        }
                    }
                    while (received < sent) {
                        in.clear();
                        int n = client.read(in);
                        if (n < 0) {
                            throw new java.io.EOFException("echo ended after " + received + " bytes");
                        }
                        received += n;
                    }
                }
                System.out.println("PATH " + dev.hadronio.HadronioProvider.transportOf(client));
            }
            echo.join();
        }
        System.out.println("PID " + ProcessHandle.current().pid());
        System.out.println("READY");
        new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8)).readLine();
    }
}
