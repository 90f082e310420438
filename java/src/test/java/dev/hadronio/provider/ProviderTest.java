package dev.hadronio.provider;

import static org.junit.Assert.assertNull;
import static org.junit.Assert.assertTrue;
import static org.junit.Assert.fail;

import dev.hadronio.HadronioProvider;
import java.net.StandardProtocolFamily;
import java.nio.channels.DatagramChannel;
import org.junit.Test;

/** What the provider does beyond TCP channels, and that merely being on the class path is harmless. */
public class ProviderTest {
    @Test
    public void jarDoesNotRegisterItselfAsTheDefaultProvider() {
        assertNull("a META-INF/services entry would silently replace the JDK's provider",
            HadronioProvider.class.getClassLoader().getResource("META-INF/services/java.nio.channels.spi.SelectorProvider"));
    }

    @Test
    public void datagramChannelsAreDelegatedOrRefusedWithAReason() throws Exception {
        HadronioProvider provider = new HadronioProvider();
        try (DatagramChannel channel = provider.openDatagramChannel()) {
            assertTrue("delegated to the JDK", !channel.getClass().getName().startsWith("dev.hadronio"));
        } catch (UnsupportedOperationException e) {
            assertTrue(e.getMessage(), e.getMessage().contains("--add-exports java.base/sun.nio.ch=ALL-UNNAMED"));
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
