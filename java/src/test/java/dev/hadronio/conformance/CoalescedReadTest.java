package dev.hadronio.conformance;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertTrue;

import java.io.ByteArrayOutputStream;
import java.net.StandardSocketOptions;
import java.nio.ByteBuffer;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.junit.Test;
import org.junit.runner.RunWith;
import org.junit.runners.Parameterized;
import org.junit.runners.Parameterized.Parameters;

/**
 * Scenario 3: several small messages that arrived before the read are returned by one read (a byte
 * stream, not a message queue). The writer sets {@code TCP_NODELAY}, so that on the JDK no segment waits
 * for an acknowledgement (Nagle) and all bytes are in the receive queue once the writes returned.
 */
@RunWith(Parameterized.class)
public class CoalescedReadTest extends AbstractConformanceTest {

    static final int MESSAGES = 10;
    static final int MESSAGE_SIZE = 100;

    @Parameters(name = "{0}")
    public static List<Object[]> parameters() {
        return Providers.parameters();
    }

    @Test
    public void smallMessagesCoalesceIntoHeapBuffer() throws Exception {
        coalesce(BufferKind.HEAP);
    }

    @Test
    public void smallMessagesCoalesceIntoDirectBuffer() throws Exception {
        coalesce(BufferKind.DIRECT);
    }

    private void coalesce(BufferKind kind) throws Exception {
        byte[] data = randomBytes(3, MESSAGES * MESSAGE_SIZE);
        Pair pair = connectPair();
        pair.server.setOption(StandardSocketOptions.TCP_NODELAY, true);
        CountDownLatch written = new CountDownLatch(1);
        Background<Void> writer = background("writer", () -> {
            for (int i = 0; i < MESSAGES; i++) {
                writeFully(pair.server, ByteBuffer.wrap(data, i * MESSAGE_SIZE, MESSAGE_SIZE));
            }
            written.countDown();
            return null;
        });
        assertTrue("the writes returned", written.await(WAIT_SECONDS, TimeUnit.SECONDS));
        writer.join();

        ByteBuffer buffer = kind.allocate(4096);
        int first = pair.client.read(buffer);
        assertTrue("the first read returns more than one " + MESSAGE_SIZE + "-byte message, returned " + first,
                first > MESSAGE_SIZE);
        ByteArrayOutputStream received = new ByteArrayOutputStream();
        int n = first;
        while (true) {
            buffer.flip();
            byte[] chunk = new byte[n];
            buffer.get(chunk);
            received.write(chunk);
            if (received.size() >= data.length) {
                break;
            }
            buffer.clear();
            n = pair.client.read(buffer);
            assertTrue("read() before all bytes arrived returned " + n, n > 0);
        }
        assertEquals("bytes received", data.length, received.size());
        assertBytesEqual("coalesced messages", data, received.toByteArray());
    }
}
