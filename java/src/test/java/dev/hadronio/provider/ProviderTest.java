package dev.hadronio.provider;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertNull;
import static org.junit.Assert.assertTrue;
import static org.junit.Assert.fail;

import dev.hadronio.HadronioProvider;
import java.net.InetSocketAddress;
import java.net.StandardProtocolFamily;
import java.nio.ByteBuffer;
import java.nio.channels.DatagramChannel;
import java.nio.channels.IllegalSelectorException;
import java.nio.channels.Pipe;
import java.nio.channels.SelectionKey;
import java.nio.channels.Selector;
import org.junit.Test;

/** What the provider does beyond TCP channels, and that merely being on the class path is harmless. */
public class ProviderTest {
    @Test
    public void jarDoesNotRegisterItselfAsTheDefaultProvider() {
        assertNull("a META-INF/services entry would silently replace the JDK's provider",
            HadronioProvider.class.getClassLoader().getResource("META-INF/services/java.nio.channels.spi.SelectorProvider"));
    }

    /**
     * Datagram channels and pipes are the JDK's, without {@code --add-exports} (this JVM has none):
     * they work, and a hadroNIO selector refuses them as any provider's selector refuses foreign
     * channels.
     */
    @Test
    public void datagramChannelsAndPipesAreTheJdks() throws Exception {
        HadronioProvider provider = new HadronioProvider();
        try (DatagramChannel receiver = provider.openDatagramChannel();
                DatagramChannel sender = provider.openDatagramChannel()) {
            assertTrue("the JDK's datagram channel", !receiver.getClass().getName().startsWith("dev.hadronio"));
            receiver.bind(new InetSocketAddress("127.0.0.1", 0));
            sender.send(ByteBuffer.wrap(new byte[] {42}), receiver.getLocalAddress());
            ByteBuffer got = ByteBuffer.allocate(4);
            receiver.receive(got);
            assertEquals("a datagram went through", 1, got.position());
            try (Selector selector = provider.openSelector()) {
                receiver.configureBlocking(false);
                receiver.register(selector, SelectionKey.OP_READ);
                fail("a hadroNIO selector took a JDK datagram channel");
            } catch (IllegalSelectorException expected) {
                // as any provider's selector with another provider's channel
            }
        }
        Pipe pipe = provider.openPipe();
        try {
            pipe.sink().write(ByteBuffer.wrap(new byte[] {1, 2, 3}));
            ByteBuffer got = ByteBuffer.allocate(8);
            assertEquals("bytes through the JDK's pipe", 3, pipe.source().read(got));
        } finally {
            pipe.sink().close();
            pipe.source().close();
        }
    }

    @Test
    public void unixDomainChannelsAreRefused() throws Exception {
        HadronioProvider provider = new HadronioProvider();
        try {
            provider.openSocketChannel(StandardProtocolFamily.valueOf("UNIX"));
            fail("UNIX-domain channel opened");
        } catch (UnsupportedOperationException e) {
            assertTrue(e.getMessage(), e.getMessage().contains("TCP channels only"));
        } catch (IllegalArgumentException e) {
            // Java 11-15 have no UNIX family: nothing to refuse.
        }
    }
}
