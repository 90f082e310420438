package dev.hadronio.conformance;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertTrue;

import java.nio.ByteBuffer;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.util.List;
import org.junit.Test;
import org.junit.runner.RunWith;
import org.junit.runners.Parameterized;
import org.junit.runners.Parameterized.Parameters;

/**
 * Scenario 10: 200 short connections one after the other to one server: connect, exchange a few bytes,
 * close. Each succeeds and the server accepts each.
 */
@RunWith(Parameterized.class)
public class SequentialConnectionsTest extends AbstractConformanceTest {

    static final int CONNECTIONS = 200;

    @Parameters(name = "{0}")
    public static List<Object[]> parameters() {
        return Providers.parameters();
    }

    @Test
    public void twoHundredSequentialConnections() throws Exception {
        ServerSocketChannel server = openServer();
        Background<Integer> acceptor = background("acceptor", () -> {
            int served = 0;
            for (int i = 0; i < CONNECTIONS; i++) {
                try (SocketChannel accepted = server.accept()) {
                    ByteBuffer request = ByteBuffer.allocate(4);
                    readFully(accepted, request);
                    int value = request.getInt(0);
                    ByteBuffer response = ByteBuffer.allocate(8);
                    response.putInt(value).putInt(~value).flip();
                    writeFully(accepted, response);
                    served++;
                }
            }
            return served;
        });

        for (int i = 0; i < CONNECTIONS; i++) {
            try (SocketChannel client = provider.openSocketChannel()) {
                assertTrue("connect #" + i, client.connect(server.getLocalAddress()));
                ByteBuffer request = ByteBuffer.allocate(4);
                request.putInt(0, i * 7919);
                writeFully(client, request);
                ByteBuffer response = ByteBuffer.allocate(8);
                readFully(client, response);
                assertEquals("connection #" + i + " echo", i * 7919, response.getInt(0));
                assertEquals("connection #" + i + " complement", ~(i * 7919), response.getInt(4));
                assertEquals("connection #" + i + " end of stream", -1, client.read(ByteBuffer.allocate(1)));
            }
        }
        assertEquals("connections served", CONNECTIONS, (int) acceptor.join());
    }
}
