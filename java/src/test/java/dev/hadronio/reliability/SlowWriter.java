package dev.hadronio.reliability;

import java.io.IOException;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.SelectionKey;
import java.nio.channels.Selector;
import java.nio.channels.SocketChannel;
import java.util.Locale;
import java.util.SplittableRandom;
import java.util.zip.CRC32;

/**
 * The writer JVM of {@link SlowReaderTest}: connects (JVM-wide provider) and writes {@code bytes} as
 * fast as the channel takes them, in 1 MiB writes, in blocking mode or through a selector, while a
 * reporter thread prints what it sees.
 *
 * <pre>
 * SlowWriter &lt;blocking|selector&gt; &lt;host&gt; &lt;port&gt; &lt;bytes&gt;
 * </pre>
 *
 * <p>The stream is {@link #pool} repeated: byte {@code p} is {@code pool[p % POOL_LENGTH]}, so the reader
 * can check every byte. Lines: {@code BASELINE rssKiB=<n>} once connected, before the first write;
 * every 25 ms {@code STATUS written=<bytes> returns=<write calls returned> inWrite=<0|1>
 * zero=<0-byte writes> partial=<partial writes> writable=<selects with OP_WRITE ready> rssKiB=<n>
 * peakKiB=<n>}; at the end {@code DONE <bytes> <crc32>}. The resident size is sampled every 2 ms. After
 * the last byte it shuts its output down and waits for the reader's close (end of stream), so that
 * nothing still on its way is lost by exiting, then exits 0 ({@code FAILED ...} and 1 on an error).
 */
public final class SlowWriter {
    /** Length of the repeating pattern: not a power of two, so 1 MiB writes start at ever new offsets. */
    static final int POOL_LENGTH = (4 << 20) + 8;
    static final int CHUNK = 1 << 20;

    private volatile long written;
    private volatile long returns;
    private volatile boolean inWrite;
    private volatile long zero;
    private volatile long partial;
    private volatile long writable;
    private volatile long peakKiB;
    private volatile boolean done;

    private SlowWriter() {
    }

    /**
     * The pattern in a direct buffer of {@code POOL_LENGTH + extra} bytes: the pattern, then its first
     * {@code extra} bytes again, so that a slice of up to {@code extra} bytes may start anywhere in it.
     */
    static ByteBuffer pool(int extra) {
        ByteBuffer pool = ByteBuffer.allocateDirect(POOL_LENGTH + extra);
        SplittableRandom random = new SplittableRandom(0x51_0E_2E_AD);
        for (int i = 0; i < POOL_LENGTH; i += 8) {
            pool.putLong(i, random.nextLong());
        }
        for (int i = 0; i < extra; i++) {
            pool.put(POOL_LENGTH + i, pool.get(i));
        }
        return pool;
    }

    public static void main(String[] args) {
        ChildJvm.runMain(() -> {
            new SlowWriter().run(args[0].equals("selector"), args[1], Integer.parseInt(args[2]), Long.parseLong(args[3]));
        });
    }

    private void run(boolean selectorMode, String host, int port, long bytes) throws Exception {
        ByteBuffer pool = pool(CHUNK);
        SocketChannel channel = SocketChannel.open(new InetSocketAddress(host, port));
        Thread.sleep(200);
        long baseline = Footprint.rssKiB();
        peakKiB = baseline;
        System.out.println("BASELINE rssKiB=" + baseline);
        System.out.flush();
        Thread reporter = new Thread(this::report, "slow-writer-reporter");
        reporter.setDaemon(true);
        reporter.start();

        CRC32 crc = new CRC32();
        if (selectorMode) {
            writeThroughSelector(channel, pool, bytes, crc);
        } else {
            writeBlocking(channel, pool, bytes, crc);
        }
        done = true;
        reporter.join();
        System.out.println(status());
        System.out.println("DONE " + written + " " + crc.getValue());
        System.out.flush();
        channel.shutdownOutput();
        int n = channel.read(ByteBuffer.allocate(1));
        if (n != -1) {
            throw new IllegalStateException("the reader sent " + n + " bytes; expected its close");
        }
        channel.close();
    }

    private ByteBuffer next(ByteBuffer pool, long bytes) {
        ByteBuffer slice = pool.duplicate();
        int offset = (int) (written % POOL_LENGTH);
        slice.limit(offset + (int) Math.min(CHUNK, bytes - written)).position(offset);
        return slice;
    }

    private static void checksum(CRC32 crc, ByteBuffer slice, int from) {
        ByteBuffer done = slice.duplicate();
        done.limit(slice.position()).position(from);
        crc.update(done);
    }

    private void writeBlocking(SocketChannel channel, ByteBuffer pool, long bytes, CRC32 crc) throws IOException {
        while (written < bytes) {
            ByteBuffer slice = next(pool, bytes);
            int from = slice.position();
            inWrite = true;
            int n = channel.write(slice);
            inWrite = false;
            returns++;
            if (slice.hasRemaining()) {
                throw new IllegalStateException("a blocking write returned " + n + " with " + slice.remaining()
                        + " bytes left");
            }
            checksum(crc, slice, from);
            written += n;
        }
    }

    private void writeThroughSelector(SocketChannel channel, ByteBuffer pool, long bytes, CRC32 crc)
            throws IOException {
        channel.configureBlocking(false);
        try (Selector selector = Selector.open()) {
            SelectionKey key = channel.register(selector, SelectionKey.OP_WRITE);
            ByteBuffer slice = next(pool, bytes);
            while (written < bytes) {
                selector.select(100);
                if (!selector.selectedKeys().remove(key) || !key.isWritable()) {
                    continue;
                }
                writable++;
                while (written < bytes) {
                    if (!slice.hasRemaining()) {
                        slice = next(pool, bytes);
                    }
                    int from = slice.position();
                    inWrite = true;
                    int n = channel.write(slice);
                    inWrite = false;
                    returns++;
                    checksum(crc, slice, from);
                    written += n;
                    if (n == 0) {
                        zero++;
                        break;
                    }
                    if (slice.hasRemaining()) {
                        partial++;
                        break;
                    }
                }
            }
            key.cancel();
            selector.selectNow();
        }
        channel.configureBlocking(true);
    }

    private String status() {
        return String.format(Locale.ROOT, "STATUS written=%d returns=%d inWrite=%d zero=%d partial=%d writable=%d"
                + " rssKiB=%d peakKiB=%d", written, returns, inWrite ? 1 : 0, zero, partial, writable,
                Footprint.rssKiB(), peakKiB);
    }

    private void report() {
        int tick = 0;
        while (!done) {
            long rss = Footprint.rssKiB();
            if (rss > peakKiB) {
                peakKiB = rss;
            }
            if (++tick % 12 == 0) {
                System.out.println(status());
                System.out.flush();
            }
            try {
                Thread.sleep(2);
            } catch (InterruptedException e) {
                return;
            }
        }
    }
}
