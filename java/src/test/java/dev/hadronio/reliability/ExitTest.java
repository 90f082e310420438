package dev.hadronio.reliability;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertTrue;

import java.io.IOException;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.nio.channels.spi.SelectorProvider;
import java.util.ArrayList;
import java.util.List;
import org.junit.Rule;
import org.junit.Test;
import org.junit.rules.TestRule;
import org.junit.runner.RunWith;
import org.junit.runners.Parameterized;
import org.junit.runners.Parameterized.Parameter;
import org.junit.runners.Parameterized.Parameters;

/**
 * A JVM that ends with a connection open (an HTTP client's pooled connections, say): the kernel
 * closes a process's sockets with a FIN after the bytes they still had to send, so the peer reads
 * everything and then end of stream. The same must hold over hadroNIO, where the stream's end is
 * a FIN frame the library sends. A client JVM writes a known stream ({@link ExitPeer}, blocking or
 * through a selector, whose last writes may still be staged) and calls {@code System.exit} or
 * returns from {@code main}; the reader here pauses near the end so that data is still in flight
 * when the client ends. It must read every byte, in order, and then end of stream, not a reset.
 */
@RunWith(Parameterized.class)
public class ExitTest {
    static final long TOTAL = (8L << 20) + 4099;
    /** The reader pauses with this much left until the client has written everything (or 2 s). */
    static final long PAUSE_BEFORE_END = 768 * 1024;

    @Parameters(name = "{0}-{1}-{2}")
    public static List<Object[]> parameters() {
        List<Object[]> rows = new ArrayList<>();
        for (Reliability.Provider provider : Reliability.Provider.values()) {
            for (String mode : new String[] {"blocking", "selector"}) {
                for (String end : new String[] {"exit", "return"}) {
                    rows.add(new Object[] {provider, mode, end});
                }
            }
        }
        return rows;
    }

    @Parameter(0)
    public Reliability.Provider provider;
    @Parameter(1)
    public String mode;
    @Parameter(2)
    public String end;

    private final Resources resources = new Resources();

    @Rule
    public final TestRule rules = resources.withTimeout(90);

    /** Fills {@code buffer} (position to limit) with the stream's bytes from {@code offset} on. */
    static void pattern(ByteBuffer buffer, long offset) {
        for (long at = offset; buffer.hasRemaining(); at++) {
            buffer.put(expected(at));
        }
    }

    static byte expected(long offset) {
        long x = offset * 0x9E3779B97F4A7C15L;
        return (byte) (x >>> 56 ^ offset);
    }

    @Test
    public void thePeerReadsEverythingThenEndOfStream() throws Exception {
        SelectorProvider sp = provider.get();
        ServerSocketChannel server = resources.add(sp.openServerSocketChannel());
        server.bind(new InetSocketAddress("127.0.0.1", 0));
        int port = ((InetSocketAddress) server.getLocalAddress()).getPort();
        ChildJvm peer = resources.add(new ChildJvm.Builder("client", ExitPeer.class).provider(provider)
                .args("127.0.0.1", port, TOTAL, mode, end).start());
        SocketChannel channel = resources.add(Reliability.acceptWithin(server, peer, 30));

        ByteBuffer buffer = ByteBuffer.allocateDirect(64 * 1024);
        long read = 0;
        String outcome;
        boolean paused = false;
        try {
            while (true) {
                if (!paused && TOTAL - read <= PAUSE_BEFORE_END) {
                    paused = true;
                    peer.await(text -> text.startsWith("WRITTEN "), 2);
                }
                buffer.clear();
                if (!paused) {
                    buffer.limit((int) Math.min(buffer.capacity(), TOTAL - PAUSE_BEFORE_END - read));
                }
                int n = channel.read(buffer);
                if (n < 0) {
                    outcome = "end of stream";
                    break;
                }
                buffer.flip();
                while (buffer.hasRemaining()) {
                    byte b = buffer.get();
                    if (b != expected(read)) {
                        throw new AssertionError("byte " + read + " is " + b + ", expected " + expected(read));
                    }
                    read++;
                }
            }
        } catch (IOException e) {
            outcome = e.toString();
        }
        assertEquals("the client's exit status\n" + peer.output(), 0, peer.awaitExit(30));
        if (provider == Reliability.Provider.HADRONIO) {
            String path = peer.awaitValue("PATH", 1);
            assertTrue("the connection ran over UCX: " + path, path != null && path.startsWith("ucx"));
        }
        assertEquals("after " + read + " of " + TOTAL + " bytes\n" + peer.output(), "end of stream", outcome);
        assertEquals("bytes read", TOTAL, read);
    }
}
