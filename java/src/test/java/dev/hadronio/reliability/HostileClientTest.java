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
import java.net.SocketException;
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
 * Hostile input: raw {@code java.net.Socket} clients meet a hadroNIO server (an echo server in a
 * child JVM, {@link EchoServerPeer}, blocking accept loop or selector). Some speak no hadroNIO at
 * all (plain bytes, some of which look like hadroNIO); the others take part in the out-of-band
 * handshake (an urgent offer, the server's urgent answer, their urgent mark) and then send
 * garbage, truncated and oversized frames, wrong versions, bogus frames, forged UCX worker
 * addresses, or close in the middle of the handshake, one after the other, while a well-behaved
 * hadroNIO client in this JVM does echo round trips over UCX on the same server the whole time.
 *
 * <p>For every hostile connection: the server serves it as plain TCP (no offer, or an offer never
 * followed by a mark: the bytes are echoed as they are), keeps it on TCP after giving the upgrade
 * up (an unusable HELLO or ADDR: the echo comes back after the server's RAW frame), or fails it
 * (the server's read throws an {@code IOException} naming the problem, the server closes it, the
 * raw client sees the close); and the server's native log ({@code HADRONIO_LOG=info}) has a line
 * naming what was wrong or which path it took, tied to the client by its address. Throughout: the
 * good client keeps getting correct echoes, its connection stays on UCX, and the server JVM never
 * dies, panics or aborts.
 *
 * <p>The server runs with {@code UCX_TLS=sm,self}: a forged worker address can then name nothing
 * but shared memory on this host, never a network address.
 */
@RunWith(Parameterized.class)
public class HostileClientTest {
    /** How long the server may take to close a connection it must fail. */
    static final int CLOSE_BOUND_MILLIS = 10_000;
    /** The server's liveness bound, which ends the wait for UCX messages a FIN announced. */
    static final int LIVENESS_MILLIS = 3000;

    static final byte[] MAGIC = {(byte) 0x89, 'h', 'N', 'I', 'O', '\r', '\n', 0x1a};
    static final int HELLO = 1;
    static final int ADDR = 2;
    static final int DATA = 3;
    static final int SWITCH = 4;
    static final int FIN = 5;
    static final int CREDIT = 6;
    static final int AUTH = 7;
    static final int RAW = 8;
    static final int OFFER = 0x00;
    static final int ACCEPT = 0xa1;
    static final int MARK_CLIENT = 0xa2;
    static final int MARK_SERVER = 0xa3;
    static final int CLIENT = 1;
    static final int SERVER = 2;

    @Parameters(name = "{0}")
    public static List<Object[]> parameters() {
        return Arrays.asList(new Object[][] {{"blocking"}, {"selector"}});
    }

    @Parameter(0)
    public String mode;

    private final Resources resources = new Resources();

    @Rule
    public final TestRule rules = resources.withTimeout(180);

    /** What the server must do with a hostile connection. */
    enum Expect {
        /** Serve it as plain TCP: echo the bytes, end with EOF after the client's FIN. */
        PLAIN,
        /** Fail it: the server's read throws, the server closes the connection. */
        FAIL,
        /** Give the upgrade up and keep it on TCP: a DATA frame is echoed, FIN ends it. */
        FALLBACK
    }

    /** How the raw client takes part in the handshake. */
    enum Handshake {
        /** Not at all: a plain client. */
        NONE,
        /** Offers, takes the answer and never marks: plain bytes after the offer. */
        OFFER_ONLY,
        /** Offers, takes the answer, marks: hadroNIO frames (or whatever the case sends) follow. */
        MARK
    }

    /** How the raw client ends its side after sending. */
    enum Ending { KEEP_OPEN, FIN, RESET }

    static final class Case {
        final String name;
        final Handshake handshake;
        final byte[] bytes;
        /** Bytes sent once the server's ADDR came (null: none). */
        final byte[] afterAddr;
        final Ending ending;
        final Expect expect;
        /** Text the server's exception (CLOSED line) must contain, or null. */
        final String exception;
        /** Text the server's log line about this connection must contain, or null. */
        final String log;
        /** An urgent byte sent instead of the mark (-1: the mark). */
        int urgentInstead = -1;

        Case(String name, Handshake handshake, byte[] bytes, byte[] afterAddr, Ending ending, Expect expect,
                String exception, String log) {
            this.name = name;
            this.handshake = handshake;
            this.bytes = bytes;
            this.afterAddr = afterAddr;
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

    /** A HELLO of `role` from a process on an unknown host (host 0). */
    /** The protocol version this build speaks (native/src/core/protocol.rs). */
    static final int PROTOCOL = 4;

    static byte[] hello(int version, int minVersion, int capabilities, int role) {
        return frame(HELLO, ByteBuffer.allocate(44).putShort((short) version).putShort((short) minVersion)
                .putInt(capabilities).put((byte) role).put(new byte[3]).putLong(0x5eed_0001L).putLong(0)
                .putLong(0).putLong(0x5eedL).array());
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

    static Case plain(String name, byte[] bytes, Ending ending, String log) {
        return new Case(name, Handshake.NONE, bytes, null, ending, Expect.PLAIN, null, log);
    }

    static Case fail(String name, byte[] afterMark, Ending ending, String exception, String log) {
        return new Case(name, Handshake.MARK, afterMark, null, ending, Expect.FAIL, exception, log);
    }

    static Case fallback(String name, byte[] afterMark, String log) {
        return new Case(name, Handshake.MARK, afterMark, null, Ending.KEEP_OPEN, Expect.FALLBACK, null, log);
    }

    static List<Case> cases() {
        byte[] goodHello = hello(PROTOCOL, PROTOCOL, 1, CLIENT);
        String handshake = "failed during the hadroNIO handshake";
        List<Case> cases = new ArrayList<>();
        byte[] text = "GET / HTTP/1.0\r\nHost: hadronio\r\n\r\n".getBytes(StandardCharsets.US_ASCII);
        String notHadronio = "stays on TCP: the peer does not speak hadroNIO";
        cases.add(plain("http request", text, Ending.KEEP_OPEN, notHadronio));
        byte[] binary = random(4096, 1);
        binary[0] = 0x17;
        cases.add(plain("random bytes", binary, Ending.KEEP_OPEN, notHadronio));
        cases.add(plain("the greeting and a HELLO without an offer", concat(MAGIC, goodHello), Ending.KEEP_OPEN, notHadronio));
        cases.add(plain("nothing, then FIN", new byte[0], Ending.FIN, "stays on TCP: the peer closed before speaking"));
        cases.add(new Case("an offer, then plain bytes and no mark", Handshake.OFFER_ONLY, text, null, Ending.KEEP_OPEN,
                Expect.PLAIN, null, null));

        byte[] garbage = random(64, 2);
        garbage[0] = (byte) 0xee;
        String notGreeting = "the bytes after the peer's mark are not the hadroNIO greeting";
        cases.add(fail("garbage after the mark", garbage, Ending.KEEP_OPEN, notGreeting, notGreeting));
        cases.add(fail("greeting, then FIN", MAGIC, Ending.FIN, "before its HELLO", handshake));
        cases.add(fail("truncated HELLO, then FIN", concat(MAGIC, Arrays.copyOf(goodHello, 11)), Ending.FIN,
                "in the middle of a Hello frame: 3 of 44 bytes", handshake));
        cases.add(fail("truncated frame header, then RST", concat(MAGIC, Arrays.copyOf(goodHello, 5)), Ending.RESET,
                "in the middle of a frame header: 5 of 8 bytes", handshake));
        cases.add(fail("oversized HELLO length", concat(MAGIC, header(HELLO, 0x7fffffffL)), Ending.KEEP_OPEN,
                "Hello frame of 2147483647 bytes", "Hello frame of 2147483647 bytes"));
        cases.add(fail("HELLO length 4 GiB - 1", concat(MAGIC, header(HELLO, 0xffffffffL)), Ending.KEEP_OPEN,
                "Hello frame of 4294967295 bytes", "Hello frame of 4294967295 bytes"));
        cases.add(fail("oversized ADDR length", concat(MAGIC, goodHello, header(ADDR, 16 << 20)), Ending.KEEP_OPEN,
                "Addr frame of 16777216 bytes", "Addr frame of 16777216 bytes"));
        cases.add(fail("oversized DATA length", concat(MAGIC, goodHello, header(DATA, 1 << 30)), Ending.KEEP_OPEN,
                "Data frame of 1073741824 bytes", "Data frame of 1073741824 bytes"));
        cases.add(fail("HELLO with flags", concat(MAGIC, new byte[] {HELLO, 1, 0, 0, 0, 0, 0, 44}, new byte[44]),
                Ending.KEEP_OPEN, "non-zero flags", "non-zero flags"));
        byte[] version2 = ByteBuffer.allocate(24).putShort((short) 2).putShort((short) 2).putInt(1).array();
        cases.add(fail("a protocol version 2 HELLO", concat(MAGIC, frame(HELLO, version2)), Ending.KEEP_OPEN,
                "Hello frame of 24 bytes (allowed 44..=44)", "Hello frame of 24 bytes (allowed 44..=44)"));
        cases.add(fail("HELLO with role 0", concat(MAGIC, hello(PROTOCOL, PROTOCOL, 1, 0)), Ending.KEEP_OPEN, "HELLO with role 0",
                "HELLO with role 0"));
        cases.add(fail("inverted version range", concat(MAGIC, hello(1, 3, 1, CLIENT)), Ending.KEEP_OPEN,
                "version range 3..=1", "version range 3..=1"));
        cases.add(fail("second HELLO", concat(MAGIC, goodHello, goodHello), Ending.KEEP_OPEN, "second HELLO",
                "second HELLO"));
        cases.add(fail("bogus CREDIT frame", concat(MAGIC, goodHello, frame(CREDIT, u64(-1L))), Ending.KEEP_OPEN,
                "unexpected Credit frame", "unexpected Credit frame"));
        cases.add(fail("CREDIT of 3 bytes", concat(MAGIC, goodHello, frame(CREDIT, new byte[3])), Ending.KEEP_OPEN,
                "Credit frame of 3 bytes", "Credit frame of 3 bytes"));
        cases.add(fail("AUTH without a secret", concat(MAGIC, goodHello, frame(AUTH, new byte[16])), Ending.KEEP_OPEN,
                "AUTH without a shared secret", "AUTH without a shared secret"));
        cases.add(fail("FIN counting UCX messages without SWITCH", concat(MAGIC, goodHello, frame(FIN, u64(5))),
                Ending.KEEP_OPEN, "never switched", "never switched"));
        cases.add(fail("SWITCH before the server's ADDR", concat(MAGIC, goodHello, frame(SWITCH, new byte[0])),
                Ending.KEEP_OPEN, "SWITCH before this side sent ADDR", "SWITCH before this side sent ADDR"));
        // Once the server sent ADDR, a SWITCH is in order; the five messages never come: the read
        // fails once the server's hadronio.livenessMillis passed.
        cases.add(new Case("SWITCH after the server's ADDR and a FIN counting 5 UCX messages, then FIN", Handshake.MARK,
                concat(MAGIC, goodHello), concat(frame(SWITCH, new byte[0]), frame(FIN, u64(5))), Ending.FIN, Expect.FAIL,
                "0 of the 5 UCX messages it announced arrived", null));
        cases.add(fail("ADDR with 0 slots", concat(MAGIC, goodHello, frame(ADDR, concat(
                ByteBuffer.allocate(20).putInt(1).putInt(0).putInt(16384).putInt(16384).putInt(8).array(),
                new byte[8]))), Ending.KEEP_OPEN, "ADDR with 0 slots", "ADDR with 0 slots"));
        Case wrongUrgent = fail("an urgent byte other than the mark", concat(MAGIC, goodHello), Ending.KEEP_OPEN,
                "urgent byte 0x55 where the peer's mark was due", "urgent byte 0x55 where the peer's mark was due");
        wrongUrgent.urgentInstead = 0x55;
        cases.add(wrongUrgent);
        cases.add(fail("valid HELLO, then RST", concat(MAGIC, goodHello), Ending.RESET, "Connection reset by peer", null));

        cases.add(fallback("a future protocol version", concat(MAGIC, hello(7, 7, 1, CLIENT)),
                "stays on TCP: the peer speaks hadroNIO protocol versions 7..=7"));
        cases.add(fallback("protocol version 0", concat(MAGIC, hello(0, 0, 1, CLIENT)),
                "stays on TCP: the peer speaks hadroNIO protocol versions 0..=0"));
        cases.add(fallback("a HELLO without UCX", concat(MAGIC, hello(PROTOCOL, PROTOCOL, 0, CLIENT)),
                "stays on TCP: UCX is unavailable on the peer's side"));
        cases.add(fallback("a HELLO of a server (a reflected stream)", concat(MAGIC, hello(PROTOCOL, PROTOCOL, 1, SERVER)),
                "stays on TCP: the peer's stream is this side's own, reflected"));
        byte[] forged = random(64, 3);
        forged[0] = 0x0f;
        cases.add(fallback("ADDR with a worker address of unknown version", concat(MAGIC, goodHello, addr(forged)),
                "stays on TCP: UCX endpoint could not be created"));
        byte[] forgedGarbage = random(200, 4);
        forgedGarbage[0] = 0x01;
        cases.add(fallback("ADDR with a garbage worker address", concat(MAGIC, goodHello, addr(forgedGarbage)),
                "stays on TCP"));
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
                .jvm("-Xmx256m", "-Dhadronio.livenessMillis=" + LIVENESS_MILLIS)
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
        // Only this connection's lines count: a local port can come again in a later case.
        int from = server.lines().size();
        Socket socket = new Socket();
        try {
            socket.setTcpNoDelay(true);
            // The server's urgent bytes (its answer and mark) arrive inline, where it sent them.
            socket.setOOBInline(true);
            socket.connect(new InetSocketAddress("127.0.0.1", port), 5000);
            socket.setSoTimeout(CLOSE_BOUND_MILLIS);
            int local = socket.getLocalPort();
            String tag = "from 127.0.0.1:" + local;
            OutputStream out = socket.getOutputStream();
            ServerStream in = new ServerStream(socket.getInputStream());
            if (hostile.handshake != Handshake.NONE) {
                socket.sendUrgentData(OFFER);
                int answer = in.next();
                if (answer != ACCEPT) {
                    return "the server's first byte after the offer is " + answer + ", not its urgent ACCEPT";
                }
                if (hostile.handshake == Handshake.MARK) {
                    socket.sendUrgentData(hostile.urgentInstead >= 0 ? hostile.urgentInstead : MARK_CLIENT);
                }
            }
            boolean refused = false;
            try {
                out.write(hostile.bytes);
                out.flush();
            } catch (SocketException e) {
                // A connection the server must fail may be failed (and reset) before these bytes
                // are out, as soon as it sees the violation (an urgent byte in place of the mark):
                // its CLOSED and log lines below tell what it saw.
                if (hostile.expect != Expect.FAIL) {
                    throw e;
                }
                refused = true;
            }
            if (refused) {
                socket.close();
            } else if (hostile.afterAddr != null) {
                if (!in.awaitFrame(ADDR)) {
                    return "the server sent no ADDR";
                }
                out.write(hostile.afterAddr);
                out.flush();
            }
            if (!refused && hostile.ending == Ending.RESET) {
                socket.setSoLinger(true, 0);
                socket.close();
            } else if (!refused && hostile.ending == Ending.FIN) {
                socket.shutdownOutput();
            }

            if (hostile.expect == Expect.PLAIN && hostile.bytes.length > 0) {
                byte[] echoed = in.raw(hostile.bytes.length);
                if (!Arrays.equals(hostile.bytes, echoed)) {
                    return "served as plain TCP, the echo differs (" + echoed.length + " bytes)";
                }
                socket.shutdownOutput();
            } else if (hostile.expect == Expect.FALLBACK) {
                byte[] payload = "still served on TCP".getBytes(StandardCharsets.US_ASCII);
                out.write(frame(DATA, payload));
                out.write(frame(FIN, u64(0)));
                out.flush();
                byte[] echoed = in.dataUntilClosed();
                if (!Arrays.equals(payload, echoed)) {
                    return "kept on TCP, the echo came back as " + new String(echoed, StandardCharsets.ISO_8859_1);
                }
            }
            if (!socket.isClosed()) {
                String end = in.end();
                if (end.startsWith("open")) {
                    return "the server did not close the connection within " + CLOSE_BOUND_MILLIS + " ms";
                }
            }

            ChildJvm.Line closed = server.await(from, text -> text.startsWith("CLOSED " + local + " "), 10);
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
                ChildJvm.Line logged = server.await(from, text -> text.contains(tag) && text.contains(hostile.log), 5);
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

    /**
     * The server's side of a hostile connection as the raw client reads it (urgent bytes inline):
     * raw bytes, then (if the server marked its stream) its mark, the magic and frames, and raw
     * bytes again after a RAW frame.
     */
    static final class ServerStream {
        private final InputStream in;
        /** Whether the server's mark came: what follows are frames (until RAW). */
        private boolean framed;
        private boolean rawAgain;

        ServerStream(InputStream in) {
            this.in = in;
        }

        /** The next byte (-1 at the end); a timeout ends the wait with an exception. */
        int next() throws IOException {
            return in.read();
        }

        /** `n` raw bytes (fewer if the stream ends). */
        byte[] raw(int n) throws IOException {
            return in.readNBytes(n);
        }

        /** Reads up to the server's mark and through its frames until one of `type`; false at the end. */
        boolean awaitFrame(int type) throws IOException {
            if (!framed) {
                for (int b = in.read(); b != MARK_SERVER; b = in.read()) {
                    if (b < 0) {
                        return false;
                    }
                }
                byte[] magic = in.readNBytes(MAGIC.length);
                if (!Arrays.equals(MAGIC, magic)) {
                    return false;
                }
                framed = true;
            }
            while (true) {
                byte[] header = in.readNBytes(8);
                if (header.length < 8) {
                    return false;
                }
                int kind = header[0] & 0xff;
                int length = ByteBuffer.wrap(header, 4, 4).getInt();
                in.readNBytes(length);
                if (kind == RAW) {
                    rawAgain = true;
                    return false;
                }
                if (kind == type) {
                    return true;
                }
            }
        }

        /**
         * The application bytes the server sends until it closes (EOF or reset): DATA payloads while
         * its stream carries frames, raw bytes before its mark and after its RAW.
         */
        byte[] dataUntilClosed() throws IOException {
            ByteArrayOutputStream data = new ByteArrayOutputStream();
            try {
                while (true) {
                    if (!framed || rawAgain) {
                        int b = in.read();
                        if (b < 0) {
                            break;
                        }
                        if (!framed && b == MARK_SERVER) {
                            byte[] magic = in.readNBytes(MAGIC.length);
                            if (!Arrays.equals(MAGIC, magic)) {
                                throw new IOException("no magic after the server's mark");
                            }
                            framed = true;
                        } else {
                            data.write(b);
                        }
                        continue;
                    }
                    byte[] header = in.readNBytes(8);
                    if (header.length < 8) {
                        break;
                    }
                    int kind = header[0] & 0xff;
                    int length = ByteBuffer.wrap(header, 4, 4).getInt();
                    byte[] payload = in.readNBytes(length);
                    if (kind == DATA) {
                        data.write(payload, 0, payload.length);
                    } else if (kind == RAW) {
                        rawAgain = true;
                    }
                }
            } catch (SocketTimeoutException e) {
                throw new IOException("the server did not close the connection within " + CLOSE_BOUND_MILLIS + " ms");
            } catch (IOException e) {
                // reset: what arrived before is all there is
            }
            return data.toByteArray();
        }

        /** "EOF", "reset ..." or "open" (nothing within the bound), draining what the server sends. */
        String end() {
            byte[] buffer = new byte[64 * 1024];
            try {
                while (in.read(buffer) >= 0) {
                    // the server's answer, mark and frames
                }
                return "EOF";
            } catch (SocketTimeoutException e) {
                return "open";
            } catch (IOException e) {
                return "reset " + e;
            }
        }
    }
}
