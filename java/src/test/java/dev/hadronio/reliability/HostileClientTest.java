package dev.hadronio.reliability;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertNull;
import static org.junit.Assert.assertTrue;

import dev.hadronio.nio.HadronioSocketChannel;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.net.SocketTimeoutException;
import java.nio.ByteBuffer;
import java.nio.channels.SocketChannel;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.Rule;
import org.junit.Test;
import org.junit.rules.TestRule;
import org.junit.runner.RunWith;
import org.junit.runners.Parameterized;
import org.junit.runners.Parameterized.Parameter;
import org.junit.runners.Parameterized.Parameters;

/**
 * Hostile input: raw {@code java.net.Socket} clients send a hadroNIO server (an echo server in a
 * child JVM, {@link EchoServerPeer}, blocking accept loop or selector) garbage, truncated and
 * oversized frames, wrong versions, bogus credit frames and forged UCX worker addresses, and close
 * in the middle of the handshake, one after the other, while a well-behaved hadroNIO client in this
 * JVM does echo round trips over UCX on the same server the whole time.
 *
 * <p>For every hostile connection: the server serves it as plain TCP where the design says so
 * (first bytes that are not the hadroNIO greeting), serves it on TCP without upgrading (an ADDR
 * whose UCX worker address cannot be used), or fails it (the server's read throws an
 * {@code IOException} naming the problem, the server closes it, the raw client sees the close);
 * and the server's native log ({@code HADRONIO_LOG=info}) has a line naming what was wrong, tied to
 * the client by its address. Throughout: the good client keeps getting correct echoes, its
 * connection stays on UCX, and the server JVM never dies, panics or aborts.
 *
 * <p>The server runs with {@code UCX_TLS=sm,self}: a forged worker address can then name nothing
 * but shared memory on this host, never a network address.
 */
@RunWith(Parameterized.class)
public class HostileClientTest {
    /** How long the server may take to close a connection it must fail. */
    static final int CLOSE_BOUND_MILLIS = 10_000;

    static final byte[] MAGIC = {(byte) 0x89, 'h', 'N', 'I', 'O', '\r', '\n', 0x1a};
    static final int HELLO = 1;
    static final int ADDR = 2;
    static final int DATA = 3;
    static final int SWITCH = 4;
    static final int FIN = 5;
    static final int CREDIT = 6;

    @Parameters(name = "{0}")
    public static List<Object[]> parameters() {
        return Arrays.asList(new Object[][] {{"blocking"}, {"selector"}});
    }

    @Parameter(0)
    public String mode;

    private final Resources resources = new Resources();

    @Rule
    public final TestRule rules = resources.withTimeout(120);

    /** What the server must do with a hostile connection. */
    enum Expect {
        /** Serve it as plain TCP: echo the bytes, end with EOF after the client's FIN. */
        PLAIN,
        /** Fail it: the server's read throws, the server closes the connection. */
        FAIL,
        /** Keep it on TCP (no upgrade): DATA frames are echoed, FIN ends it. */
        TCP
    }

    /** How the raw client ends its side after sending. */
    enum Ending { KEEP_OPEN, FIN, RESET }

    static final class Case {
        final String name;
        final byte[] bytes;
        final Ending ending;
        final Expect expect;
        /** Text the server's exception (CLOSED line) must contain, or null. */
        final String exception;
        /** Text the server's log line about this connection must contain, or null. */
        final String log;

        Case(String name, byte[] bytes, Ending ending, Expect expect, String exception, String log) {
            this.name = name;
            this.bytes = bytes;
            this.ending = ending;
            this.expect = expect;
            this.exception = exception;
            this.log = log;
        }

        @Override
        public String toString() {
            return name;
        }
    }

    // --- the wire format (native/src/core/protocol.rs) -----------------------------------------

    static byte[] header(int type, long length) {
        return ByteBuffer.allocate(8).put((byte) type).put((byte) 0).putShort((short) 0).putInt((int) length).array();
    }

    static byte[] frame(int type, byte[] payload) {
        return concat(header(type, payload.length), payload);
    }

    /** A HELLO from a process on an unknown host (host 0). */
    static byte[] hello(int version, int minVersion, int capabilities) {
        return frame(HELLO, ByteBuffer.allocate(24).putShort((short) version).putShort((short) minVersion)
                .putInt(capabilities).putLong(0).putLong(0x5eedL).array());
    }

    static byte[] addr(byte[] workerAddress) {
        ByteBuffer payload = ByteBuffer.allocate(20 + workerAddress.length);
        payload.putInt(1).putInt(8).putInt(16384).putInt(16384).putInt(workerAddress.length).put(workerAddress);
        return frame(ADDR, payload.array());
    }

    static byte[] u64(long value) {
        return ByteBuffer.allocate(8).putLong(value).array();
    }

    static byte[] concat(byte[]... parts) {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        for (byte[] part : parts) {
            out.write(part, 0, part.length);
        }
        return out.toByteArray();
    }

    static byte[] random(int length, long seed) {
        byte[] bytes = new byte[length];
        SplittableRandom random = new SplittableRandom(seed);
        for (int i = 0; i < length; i++) {
            bytes[i] = (byte) random.nextInt(256);
        }
        return bytes;
    }

    static List<Case> cases() {
        byte[] goodHello = hello(2, 2, 1);
        List<Case> cases = new ArrayList<>();
        byte[] text = "GET / HTTP/1.0\r\nHost: hadronio\r\n\r\n".getBytes(StandardCharsets.US_ASCII);
        cases.add(new Case("http request", text, Ending.KEEP_OPEN, Expect.PLAIN, null, "served as plain TCP"));
        byte[] binary = random(4096, 1);
        binary[0] = 0x17;
        cases.add(new Case("random bytes", binary, Ending.KEEP_OPEN, Expect.PLAIN, null, "served as plain TCP"));
        byte[] nearMagic = concat(Arrays.copyOf(MAGIC, 4), "XXXXXXXXXXXX".getBytes(StandardCharsets.US_ASCII));
        cases.add(new Case("half a greeting, then text", nearMagic, Ending.KEEP_OPEN, Expect.PLAIN, null,
                "served as plain TCP"));
        cases.add(new Case("nothing, then FIN", new byte[0], Ending.FIN, Expect.PLAIN, null, null));

        byte[] afterMagic = random(64, 2);
        afterMagic[0] = (byte) 0xee;
        cases.add(new Case("garbage after the greeting", concat(MAGIC, afterMagic), Ending.KEEP_OPEN, Expect.FAIL,
                "unknown frame type 238", "unknown frame type 238"));
        cases.add(new Case("greeting, then FIN", MAGIC, Ending.FIN, Expect.FAIL,
                "before its HELLO", "failed during the hadroNIO handshake"));
        cases.add(new Case("truncated HELLO, then FIN", concat(MAGIC, Arrays.copyOf(goodHello, 11)), Ending.FIN,
                Expect.FAIL, "in the middle of a Hello frame: 3 of 24 bytes", "failed during the hadroNIO handshake"));
        cases.add(new Case("truncated frame header, then RST", concat(MAGIC, Arrays.copyOf(goodHello, 5)),
                Ending.RESET, Expect.FAIL, "in the middle of a frame header: 5 of 8 bytes",
                "failed during the hadroNIO handshake"));
        cases.add(new Case("oversized HELLO length", concat(MAGIC, header(HELLO, 0x7fffffffL)), Ending.KEEP_OPEN,
                Expect.FAIL, "Hello frame of 2147483647 bytes", "Hello frame of 2147483647 bytes"));
        cases.add(new Case("HELLO length 4 GiB - 1", concat(MAGIC, header(HELLO, 0xffffffffL)), Ending.KEEP_OPEN,
                Expect.FAIL, "Hello frame of 4294967295 bytes", "Hello frame of 4294967295 bytes"));
        cases.add(new Case("oversized ADDR length", concat(MAGIC, goodHello, header(ADDR, 16 << 20)),
                Ending.KEEP_OPEN, Expect.FAIL, "Addr frame of 16777216 bytes", "Addr frame of 16777216 bytes"));
        cases.add(new Case("oversized DATA length", concat(MAGIC, goodHello, header(DATA, 1 << 30)),
                Ending.KEEP_OPEN, Expect.FAIL, "Data frame of 1073741824 bytes", "Data frame of 1073741824 bytes"));
        cases.add(new Case("HELLO with flags", concat(MAGIC, new byte[] {HELLO, 1, 0, 0, 0, 0, 0, 24}, new byte[24]),
                Ending.KEEP_OPEN, Expect.FAIL, "non-zero flags", "non-zero flags"));
        byte[] helloVersion1 = ByteBuffer.allocate(8).putShort((short) 1).putShort((short) 1).putInt(1).array();
        cases.add(new Case("protocol version 1 HELLO", concat(MAGIC, frame(HELLO, helloVersion1)), Ending.KEEP_OPEN,
                Expect.FAIL, "Hello frame of 8 bytes (allowed 24..=24)", "Hello frame of 8 bytes (allowed 24..=24)"));
        cases.add(new Case("wrong version", concat(MAGIC, hello(7, 7, 1)), Ending.KEEP_OPEN, Expect.FAIL,
                "peer speaks protocol versions 7..=7", "peer speaks protocol versions 7..=7"));
        cases.add(new Case("version 0", concat(MAGIC, hello(0, 0, 1)), Ending.KEEP_OPEN, Expect.FAIL,
                "peer speaks protocol versions 0..=0", "peer speaks protocol versions 0..=0"));
        cases.add(new Case("inverted version range", concat(MAGIC, hello(1, 3, 1)), Ending.KEEP_OPEN, Expect.FAIL,
                "version range 3..=1", "version range 3..=1"));
        cases.add(new Case("second HELLO", concat(MAGIC, goodHello, goodHello), Ending.KEEP_OPEN, Expect.FAIL,
                "second HELLO", "second HELLO"));
        cases.add(new Case("bogus CREDIT frame", concat(MAGIC, goodHello, frame(CREDIT, u64(-1L))), Ending.KEEP_OPEN,
                Expect.FAIL, "unexpected Credit frame", "unexpected Credit frame"));
        cases.add(new Case("CREDIT of 3 bytes", concat(MAGIC, goodHello, frame(CREDIT, new byte[3])),
                Ending.KEEP_OPEN, Expect.FAIL, "Credit frame of 3 bytes", "Credit frame of 3 bytes"));
        cases.add(new Case("FIN counting UCX messages without SWITCH", concat(MAGIC, goodHello, frame(FIN, u64(5))),
                Ending.KEEP_OPEN, Expect.FAIL, "never switched", "never switched"));
        // The server (bound to a worker at its first read) sent ADDR before it takes the SWITCH. The
        // five messages never come: the read fails once hadronio.livenessMillis passed.
        cases.add(new Case("SWITCH and a FIN counting 5 UCX messages, then FIN",
                concat(MAGIC, goodHello, frame(SWITCH, new byte[0]), frame(FIN, u64(5))), Ending.FIN, Expect.FAIL,
                "0 of the 5 UCX messages it announced arrived", null));
        cases.add(new Case("ADDR with 0 slots", concat(MAGIC, goodHello, frame(ADDR, concat(
                ByteBuffer.allocate(20).putInt(1).putInt(0).putInt(16384).putInt(16384).putInt(8).array(),
                new byte[8]))), Ending.KEEP_OPEN, Expect.FAIL, "ADDR with 0 slots", "ADDR with 0 slots"));
        byte[] forged = random(64, 3);
        forged[0] = 0x0f;
        cases.add(new Case("ADDR with a worker address of unknown version", concat(MAGIC, goodHello, addr(forged)),
                Ending.KEEP_OPEN, Expect.TCP, null, "stays on TCP"));
        byte[] garbage = random(200, 4);
        garbage[0] = 0x01;
        cases.add(new Case("ADDR with a garbage worker address", concat(MAGIC, goodHello, addr(garbage)),
                Ending.KEEP_OPEN, Expect.TCP, null, "stays on TCP"));
        cases.add(new Case("valid HELLO, then RST", concat(MAGIC, goodHello), Ending.RESET, Expect.FAIL,
                "Connection reset by peer", null));
        return cases;
    }

    // --- the well-behaved client ----------------------------------------------------------------

    /** Echo round trips of 64 bytes, and now and then 256 KiB, over one hadroNIO connection. */
    static final class GoodClient implements AutoCloseable {
        final SocketChannel channel;
        final AtomicLong roundTrips = new AtomicLong();
        final AtomicReference<String> failure = new AtomicReference<>();
        volatile boolean stop;
        final Thread thread;

        GoodClient(int port) throws IOException {
            channel = Reliability.Provider.HADRONIO.get().openSocketChannel();
            channel.connect(new InetSocketAddress("127.0.0.1", port));
            thread = new Thread(this::run, "good-client");
            thread.setDaemon(true);
            thread.start();
        }

        private void run() {
            SplittableRandom random = new SplittableRandom(5);
            ByteBuffer out = ByteBuffer.allocateDirect(256 * 1024);
            ByteBuffer in = ByteBuffer.allocateDirect(256 * 1024);
            try {
                while (!stop) {
                    int length = roundTrips.get() % 50 == 49 ? 256 * 1024 : 64;
                    out.clear().limit(length);
                    for (int i = 0; i < length; i += 8) {
                        out.putLong(i, random.nextLong());
                    }
                    while (out.hasRemaining()) {
                        channel.write(out);
                    }
                    in.clear().limit(length);
                    while (in.hasRemaining()) {
                        if (channel.read(in) < 0) {
                            throw new IOException("the echo server closed the good connection");
                        }
                    }
                    out.flip();
                    in.flip();
                    if (!in.equals(out)) {
                        throw new IOException("echo mismatch in round trip " + roundTrips.get());
                    }
                    roundTrips.incrementAndGet();
                }
            } catch (IOException | RuntimeException e) {
                if (!stop) {
                    failure.compareAndSet(null, e.toString());
                }
            }
        }

        void awaitMore(long count, long millis, ChildJvm server) throws InterruptedException {
            long target = roundTrips.get() + count;
            long deadline = System.nanoTime() + millis * 1_000_000;
            while (roundTrips.get() < target && failure.get() == null && System.nanoTime() < deadline) {
                Thread.sleep(1);
            }
            assertNull("the good client failed\n" + server.output(), failure.get());
            assertTrue("the good client made " + roundTrips.get() + " round trips, wanted " + target + "\n"
                    + server.output(), roundTrips.get() >= target);
        }

        @Override
        public void close() throws IOException {
            stop = true;
            channel.close();
            try {
                thread.join(5000);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
    }

    // --- the test -------------------------------------------------------------------------------

    @Test
    public void hostileClientsAreRefusedAndOthersServed() throws Exception {
        String row = getClass().getSimpleName() + "[" + mode + "]";
        ChildJvm server = resources.add(new ChildJvm.Builder("echo server", EchoServerPeer.class)
                .env("HADRONIO_LOG", "info")
                .env("UCX_TLS", "sm,self")
                .jvm("-Xmx256m")
                .args(mode)
                .start());
        int port = Integer.parseInt(server.awaitValue("PORT", 30));

        GoodClient good = resources.add(new GoodClient(port));
        good.awaitMore(100, 20_000, server);
        String path = ((HadronioSocketChannel) good.channel).transportDescription();
        assertTrue("the good connection runs over UCX: " + path, path.startsWith("ucx"));

        List<String> failures = new ArrayList<>();
        for (Case hostile : cases()) {
            String problem = run(row, hostile, port, server);
            if (problem != null) {
                failures.add(hostile.name + ": " + problem);
            }
            good.awaitMore(1, 10_000, server);
        }
        good.awaitMore(100, 20_000, server);
        assertTrue("the good connection still runs over UCX",
                ((HadronioSocketChannel) good.channel).transportDescription().startsWith("ucx"));
        assertTrue("the server JVM is alive\n" + server.output(), server.isAlive());
        for (String fatal : new String[] {"SERVER-DIED", "UNEXPECTED", "panicked", "Assertion", "SIGSEGV",
                "SIGABRT", "hs_err", "fatal error"}) {
            assertNull("the server's output has '" + fatal + "'\n" + server.output(),
                    server.find(text -> text.contains(fatal)));
        }
        assertEquals("hostile connections handled wrongly\n" + server.output(), "", String.join("\n", failures));
    }

    /** Runs one hostile connection; returns what went wrong, or null. */
    private String run(String row, Case hostile, int port, ChildJvm server) throws Exception {
        Socket socket = new Socket();
        try {
            socket.setTcpNoDelay(true);
            socket.connect(new InetSocketAddress("127.0.0.1", port), 5000);
            int local = socket.getLocalPort();
            String tag = "from 127.0.0.1:" + local;
            OutputStream out = socket.getOutputStream();
            InputStream in = socket.getInputStream();
            out.write(hostile.bytes);
            out.flush();
            if (hostile.ending == Ending.RESET) {
                socket.setSoLinger(true, 0);
                socket.close();
            } else if (hostile.ending == Ending.FIN) {
                socket.shutdownOutput();
            }

            if (hostile.expect == Expect.PLAIN && hostile.bytes.length > 0) {
                byte[] echoed = in.readNBytes(hostile.bytes.length);
                if (!Arrays.equals(hostile.bytes, echoed)) {
                    return "served as plain TCP, the echo differs (" + echoed.length + " bytes)";
                }
                socket.shutdownOutput();
            } else if (hostile.expect == Expect.TCP) {
                byte[] payload = "still served on TCP".getBytes(StandardCharsets.US_ASCII);
                out.write(frame(DATA, payload));
                out.write(frame(FIN, u64(0)));
                out.flush();
                byte[] echoed = dataFrames(readUntilClosed(socket, in));
                if (!Arrays.equals(payload, echoed)) {
                    return "kept on TCP, the DATA frames echoed " + new String(echoed, StandardCharsets.ISO_8859_1);
                }
            }
            if (!socket.isClosed()) {
                String end = endOf(socket, in);
                if (end.startsWith("open")) {
                    return "the server did not close the connection within " + CLOSE_BOUND_MILLIS + " ms";
                }
            }

            ChildJvm.Line closed = server.await(text -> text.startsWith("CLOSED " + local + " "), 10);
            if (closed == null) {
                return "the server printed no CLOSED line for port " + local;
            }
            String how = closed.text.substring(("CLOSED " + local + " ").length());
            if (hostile.expect == Expect.FAIL) {
                // IOException or SocketException (its subclass for a reset, as with the JDK).
                if (!how.matches("ERROR java\\.(io\\.IOException|net\\.SocketException): .*")) {
                    return "the server's read did not fail with an IOException: " + how;
                }
                if (hostile.exception != null && !how.contains(hostile.exception)) {
                    return "the server's exception does not say '" + hostile.exception + "': " + how;
                }
            } else if (!how.equals("EOF")) {
                return "the server did not end the connection with EOF: " + how;
            }
            if (hostile.log != null) {
                ChildJvm.Line logged = server.await(text -> text.contains(tag) && text.contains(hostile.log), 5);
                if (logged == null) {
                    return "no log line " + tag + " saying '" + hostile.log + "'";
                }
                Reliability.figure(row, "log for '" + hostile.name + "'",
                        logged.text.replaceFirst("^\\[[^]]*\\] ", ""), "");
            }
            return null;
        } finally {
            socket.close();
        }
    }

    /** Reads what the server sends until it closes (EOF or reset), bounded. */
    private static byte[] readUntilClosed(Socket socket, InputStream in) throws IOException {
        socket.setSoTimeout(CLOSE_BOUND_MILLIS);
        ByteArrayOutputStream received = new ByteArrayOutputStream();
        byte[] buffer = new byte[64 * 1024];
        try {
            for (int n = in.read(buffer); n >= 0; n = in.read(buffer)) {
                received.write(buffer, 0, n);
            }
        } catch (SocketTimeoutException e) {
            throw new IOException("the server did not close the connection within " + CLOSE_BOUND_MILLIS + " ms");
        } catch (IOException e) {
            // reset: what arrived before is all there is
        }
        return received.toByteArray();
    }

    /** The payload of the DATA frames in a server's hadroNIO stream. */
    private static byte[] dataFrames(byte[] stream) {
        ByteArrayOutputStream data = new ByteArrayOutputStream();
        if (stream.length < MAGIC.length || !Arrays.equals(MAGIC, Arrays.copyOf(stream, MAGIC.length))) {
            return new byte[0];
        }
        ByteBuffer frames = ByteBuffer.wrap(stream, MAGIC.length, stream.length - MAGIC.length);
        while (frames.remaining() >= 8) {
            int type = frames.get() & 0xff;
            frames.get();
            frames.getShort();
            int length = frames.getInt();
            if (length < 0 || length > frames.remaining()) {
                break;
            }
            byte[] payload = new byte[length];
            frames.get(payload);
            if (type == DATA) {
                data.write(payload, 0, length);
            }
        }
        return data.toByteArray();
    }

    /** "EOF", "reset ..." or "open" (nothing within the bound), draining what the server sends. */
    private static String endOf(Socket socket, InputStream in) throws IOException {
        socket.setSoTimeout(CLOSE_BOUND_MILLIS);
        byte[] buffer = new byte[64 * 1024];
        try {
            while (in.read(buffer) >= 0) {
                // the server's greeting and frames
            }
            return "EOF";
        } catch (SocketTimeoutException e) {
            return "open";
        } catch (IOException e) {
            return "reset " + e;
        }
    }
}
