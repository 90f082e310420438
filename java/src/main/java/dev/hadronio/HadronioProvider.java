package dev.hadronio;

import dev.hadronio.internal.Native;
import dev.hadronio.internal.NativeLoader;
import dev.hadronio.nio.HadronioSelector;
import dev.hadronio.nio.HadronioServerSocketChannel;
import dev.hadronio.nio.HadronioSocketChannel;
import java.io.IOException;
import java.net.ProtocolFamily;
import java.net.StandardProtocolFamily;
import java.nio.channels.Channel;
import java.nio.channels.DatagramChannel;
import java.nio.channels.Pipe;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.nio.channels.spi.AbstractSelector;
import java.nio.channels.spi.SelectorProvider;

/**
 * The hadroNIO {@link SelectorProvider}: socket channels, server socket channels and selectors
 * whose connections start as kernel TCP connections and move to UCX (shared memory on one host,
 * InfiniBand, RoCE or TCP between hosts) when both ends run hadroNIO.
 *
 * <p>Enable it for a whole JVM with
 * {@code -Djava.nio.channels.spi.SelectorProvider=dev.hadronio.HadronioProvider}. Differences from
 * the JDK's provider: datagram channels and pipes are the JDK's own (so they work as always, but
 * cannot be registered with a hadroNIO selector); UNIX-domain channels are not supported.
 */
public class HadronioProvider extends SelectorProvider {
    /** Creates the provider and loads the native library (throws if it cannot be loaded). */
    public HadronioProvider() {
        NativeLoader.load();
    }

    @Override
    public SocketChannel openSocketChannel() throws IOException {
        return new HadronioSocketChannel(this);
    }

    @Override
    public ServerSocketChannel openServerSocketChannel() throws IOException {
        return new HadronioServerSocketChannel(this);
    }

    /** Java 15+: TCP channels of either IP family; UNIX-domain channels are not supported. */
    public SocketChannel openSocketChannel(ProtocolFamily family) throws IOException {
        checkFamily(family);
        return openSocketChannel();
    }

    /** Java 15+: TCP server channels of either IP family. */
    public ServerSocketChannel openServerSocketChannel(ProtocolFamily family) throws IOException {
        checkFamily(family);
        return openServerSocketChannel();
    }

    private static void checkFamily(ProtocolFamily family) {
        if (family == null) {
            throw new NullPointerException("family");
        }
        if (family != StandardProtocolFamily.INET && family != StandardProtocolFamily.INET6) {
            throw new UnsupportedOperationException("hadroNIO supports TCP channels only, not " + family + " sockets");
        }
    }

    @Override
    public AbstractSelector openSelector() throws IOException {
        return new HadronioSelector(this);
    }

    @Override
    public DatagramChannel openDatagramChannel() throws IOException {
        return jdk("DatagramChannel").openDatagramChannel();
    }

    @Override
    public DatagramChannel openDatagramChannel(ProtocolFamily family) throws IOException {
        return jdk("DatagramChannel").openDatagramChannel(family);
    }

    @Override
    public Pipe openPipe() throws IOException {
        return jdk("Pipe").openPipe();
    }

    @Override
    public Channel inheritedChannel() throws IOException {
        return null;
    }

    private static volatile SelectorProvider jdk;

    /** The JDK's own provider, for the channel kinds hadroNIO does not implement. */
    private static SelectorProvider jdk(String what) throws IOException {
        SelectorProvider provider = jdk;
        if (provider == null) {
            provider = Native.jdkSelectorProvider();
            if (provider == null) {
                throw new UnsupportedOperationException("hadroNIO does not implement " + what
                        + " and could not reach the JDK's provider for it");
            }
            jdk = provider;
        }
        return provider;
    }
}
