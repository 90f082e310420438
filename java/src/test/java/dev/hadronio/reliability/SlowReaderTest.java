package dev.hadronio.reliability;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertNotNull;
import static org.junit.Assert.assertTrue;

import dev.hadronio.reliability.Reliability.Mode;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.nio.channels.spi.SelectorProvider;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.zip.CRC32;
import org.junit.Rule;
import org.junit.Test;
import org.junit.rules.TestRule;

/**
 * Back-pressure: a writer JVM ({@link SlowWriter}) offers 1 GiB as fast as it can while this JVM reads
 * slowly, then not at all, then fast.
 *
 * <ol>
 * <li><b>Slow:</b> for {@value #SLOW_MILLIS} ms this JVM reads 4 KiB, sleeps 1 ms, and so on.
 * <li><b>Stalled:</b> it stops reading. Once the writer's byte count has not moved for
 *     {@value #QUIET_MILLIS} ms (bounded wait) it is watched for {@value #STALL_MILLIS} ms more, in which
 *     it must make no progress at all: in blocking mode one write call is in progress and does not
 *     return; through a selector, OP_WRITE is not selected even once, and the writer has seen 0-byte or
 *     partial writes. What the writer got rid of but this JVM has not read ("in flight": kernel buffers
 *     with the JDK; staging buffers, receive slots and TCP buffers with hadroNIO) must stay below
 *     {@value #IN_FLIGHT_BOUND_MIB} MiB (loopback TCP autotunes up to 32 MiB of receive buffer here). It
 *     is counted from the writes that returned, so in blocking mode it may be short by up to the chunk
 *     of the write call in progress.
 * <li><b>Drained:</b> it reads everything as fast as it can; the writer resumes (more write calls return,
 *     or OP_WRITE is selected again) and finishes.
 * </ol>
 * Every byte is compared with the writer's pattern, and both ends' CRC32 and byte counts must agree. The
 * writer JVM (serial collector, fixed pre-touched heap) samples its resident size every 2 ms: its peak
 * growth over the size it had once connected, while 1 GiB is offered, must stay below
 * {@value #RSS_BOUND_MIB} MiB. Each row records that peak growth and the bytes in flight as figures.
 *
 * <p>Rows: provider (the JDK's is the oracle) x writer mode (blocking, selector). This JVM reads in
 * blocking mode with the same provider.
 */
public class SlowReaderTest extends ProviderModeTest {
    static final long OFFERED = 1L << 30;
    static final long SLOW_MILLIS = 2000;
    static final long QUIET_MILLIS = 500;
    static final long STALL_MILLIS = 1000;
    static final long IN_FLIGHT_BOUND_MIB = 64;
    static final long RSS_BOUND_MIB = 64;
    /** Only bounds a hang of the writer (it never takes this long). */
    static final long STOP_WAIT_MILLIS = 30_000;

    @Rule
    public final TestRule rules = resources.withTimeout(120);

    /** One STATUS line of the writer. */
    static final class Status {
        final long nanos;
        final Map<String, Long> values = new HashMap<>();

        Status(ChildJvm.Line line) {
            nanos = line.nanos;
            for (String word : line.text.substring("STATUS ".length()).split(" ")) {
                int equals = word.indexOf('=');
                values.put(word.substring(0, equals), Long.parseLong(word.substring(equals + 1)));
            }
        }

        long get(String key) {
            return values.get(key);
        }

        @Override
        public String toString() {
            return values.toString();
        }
    }

    /** This JVM's reading end: checks each byte against the pattern and keeps a CRC32. */
    static final class Reader {
        final SocketChannel channel;
        final ByteBuffer pattern = SlowWriter.pool(256 * 1024);
        final ByteBuffer buffer = ByteBuffer.allocateDirect(256 * 1024);
        final CRC32 crc = new CRC32();
        long received;

        Reader(SocketChannel channel) {
            this.channel = channel;
        }

        /** One read of up to {@code length} bytes; false at end of stream. */
        boolean read(int length) throws IOException {
            buffer.clear().limit(length);
            int n = channel.read(buffer);
            if (n < 0) {
                return false;
            }
            buffer.flip();
            ByteBuffer expected = pattern.duplicate();
            int offset = (int) (received % SlowWriter.POOL_LENGTH);
            expected.limit(offset + n).position(offset);
            int at = expected.mismatch(buffer);
            if (at >= 0) {
                throw new AssertionError("byte " + (received + at) + " of the stream differs from what was written");
            }
            crc.update(buffer);
            received += n;
            return true;
        }
    }

    private static Status latest(ChildJvm writer) {
        List<ChildJvm.Line> lines = writer.lines();
        for (int i = lines.size() - 1; i >= 0; i--) {
            if (lines.get(i).text.startsWith("STATUS ")) {
                return new Status(lines.get(i));
            }
        }
        return null;
    }

    /** Waits until the writer's byte count has not moved for {@link #QUIET_MILLIS}; returns its status then. */
    private static Status awaitStopped(ChildJvm writer, Reader reader) throws InterruptedException {
        long deadline = System.nanoTime() + STOP_WAIT_MILLIS * 1_000_000;
        long lastWritten = -1;
        long since = System.nanoTime();
        while (System.nanoTime() < deadline) {
            Thread.sleep(25);
            Status status = latest(writer);
            if (status == null) {
                continue;
            }
            long written = status.get("written");
            if (written != lastWritten) {
                lastWritten = written;
                since = System.nanoTime();
            } else if (System.nanoTime() - since >= QUIET_MILLIS * 1_000_000) {
                return status;
            }
        }
        throw new AssertionError("the writer never stopped while this JVM read nothing: it wrote " + lastWritten
                + " bytes, this JVM had read " + reader.received + "\n" + writer.output());
    }

    @Test
    public void writerIsHeldBackWithBoundedMemory() throws Exception {
        SelectorProvider sp = provider.get();
        ServerSocketChannel server = resources.add(sp.openServerSocketChannel());
        server.bind(new InetSocketAddress("127.0.0.1", 0));
        int port = ((InetSocketAddress) server.getLocalAddress()).getPort();
        ChildJvm writer = resources.add(new ChildJvm.Builder("writer", SlowWriter.class).provider(provider)
                .jvm("-XX:+UseSerialGC", "-Xms64m", "-Xmx64m", "-XX:+AlwaysPreTouch", "-XX:MaxDirectMemorySize=64m")
                .args(mode.name().toLowerCase(Locale.ROOT), "127.0.0.1", port, OFFERED).start());
        SocketChannel channel = resources.add(Reliability.acceptWithin(server, writer, 30));
        Reader reader = new Reader(channel);
        String name = getClass().getSimpleName() + "[" + provider + "-" + mode.name().toLowerCase(Locale.ROOT) + "]";

        // 1. slow
        long slowUntil = System.nanoTime() + SLOW_MILLIS * 1_000_000;
        while (System.nanoTime() < slowUntil) {
            assertTrue("end of stream in the slow phase\n" + writer.output(), reader.read(4096));
            Thread.sleep(1);
        }
        long slowBytes = reader.received;

        // 2. stalled
        Status stopped = awaitStopped(writer, reader);
        Thread.sleep(STALL_MILLIS);
        Status watched = latest(writer);
        long inFlight = stopped.get("written") - reader.received;
        Reliability.figure(name, "read in the slow phase", slowBytes, "bytes");
        Reliability.figure(name, "in flight while the reader stalls", inFlight, "bytes");
        String both = "\nstopped: " + stopped + "\nwatched " + STALL_MILLIS + " ms later: " + watched;
        assertEquals("bytes written while the reader stalls" + both, stopped.get("written"), watched.get("written"));
        // A blocking write call still in progress may already have handed over part of its chunk,
        // which this JVM may have read: then fewer bytes are counted as written than were read.
        long unreturned = mode == Mode.BLOCKING ? SlowWriter.CHUNK : 0;
        assertTrue("in flight while the reader stalls: " + inFlight + " bytes" + both,
                inFlight >= -unreturned && inFlight <= IN_FLIGHT_BOUND_MIB << 20);
        if (mode == Mode.BLOCKING) {
            assertEquals("a write call is in progress while the reader stalls" + both, 1, watched.get("inWrite"));
            assertEquals("write calls returned while the reader stalls" + both,
                    stopped.get("returns"), watched.get("returns"));
        } else {
            assertEquals("selects with OP_WRITE ready while the reader stalls" + both,
                    stopped.get("writable"), watched.get("writable"));
            assertTrue("the writer saw 0-byte or partial writes" + both,
                    watched.get("zero") + watched.get("partial") > 0);
        }

        // 3. drained
        long drainFrom = reader.received;
        long drainStart = System.nanoTime();
        while (reader.read(256 * 1024)) {
            // read to the end
        }
        double drainSeconds = (System.nanoTime() - drainStart) / 1e9;
        String done = writer.awaitValue("DONE", 30);
        channel.close();
        assertEquals("writer exit status\n" + writer.output(), 0, writer.awaitExit(30));
        Status last = latest(writer);
        assertNotNull(last);
        String[] words = done.split(" ");
        assertEquals("bytes the writer wrote", OFFERED, Long.parseLong(words[0]));
        assertEquals("bytes this JVM read", OFFERED, reader.received);
        assertEquals("CRC32 of the stream, writer vs reader", Long.parseLong(words[1]), reader.crc.getValue());
        if (mode == Mode.BLOCKING) {
            assertTrue("write calls returned after the reader resumed" + both + "\nlast: " + last,
                    last.get("returns") > watched.get("returns"));
        } else {
            assertTrue("OP_WRITE selected after the reader resumed" + both + "\nlast: " + last,
                    last.get("writable") > watched.get("writable"));
        }

        long baseline = Long.parseLong(writer.awaitValue("BASELINE", 1).replace("rssKiB=", ""));
        long growthKiB = last.get("peakKiB") - baseline;
        Reliability.figure(name, "writer VmRSS peak growth", growthKiB, "KiB (baseline " + baseline + " KiB, "
                + (OFFERED >> 20) + " MiB offered)");
        Reliability.figure(name, "drain after the stall", (reader.received - drainFrom) / 1e6 / drainSeconds,
                "MB/s (" + (reader.received - drainFrom) + " bytes, checked as read)");
        Reliability.figure(name, "writer 0-byte/partial writes", last.get("zero") + " / " + last.get("partial"), "");
        assertTrue("the writer's resident memory grew by " + growthKiB + " KiB (bound " + RSS_BOUND_MIB + " MiB)",
                growthKiB <= RSS_BOUND_MIB << 10);
    }
}
