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
 *
 * <p>If hadroNIO cannot start (its native library or UCX does not load, a setting is invalid), the
 * provider logs one warning naming the cause and its fix and hands out the JDK's own channels and
 * selectors instead, so the application runs as it would without hadroNIO; with
 * {@code -Dhadronio.required=true} it fails instead, with that message.
 */
public class HadronioProvider extends SelectorProvider {
    /** The JDK's provider when hadroNIO could not start; null while hadroNIO runs. */
    private final SelectorProvider fallback;

    /** Creates the provider and starts hadroNIO, or falls back to the JDK's provider (see above). */
    public HadronioProvider() {
        fallback = NativeLoader.startOrFallBack();
    }

    /**
     * Whether this provider's channels run hadroNIO; false if it could not start and hands out the
     * JDK's own channels (the log says why).
     */
    public boolean isActive() {
        return fallback == null;
    }

    /**
     * hadroNIO's counters by name (connections by path, bytes over UCX and TCP, credit stalls, how
     * waits went), the same values as the JMX MBean {@code dev.hadronio:type=Counters}; empty when
     * this provider is not active.
     */
    public java.util.Map<String, Long> counters() {
        return fallback != null ? java.util.Collections.emptyMap() : dev.hadronio.internal.Counters.read();
    }

    /**
     * Which path a connected socket channel's data takes, in one line: for a hadroNIO channel
     * {@code ucx over shared memory (<UCX transports>)}, {@code ucx over the network (...)} or
     * {@code tcp (<why>)}, for example {@code tcp (the peer does not speak hadroNIO)}; for any other
     * channel (the JDK's, also after a fall-back) {@code tcp (the JDK's channel)}. Each path
     * decision is also logged at {@code info} ({@code HADRONIO_LOG=info}).
     *
     * @throws java.nio.channels.ClosedChannelException if the channel is closed
     */
    public static String transportOf(SocketChannel channel) throws IOException {
        if (channel instanceof HadronioSocketChannel) {
            return ((HadronioSocketChannel) channel).transportDescription().split("\n", 2)[0];
        }
        if (!channel.isOpen()) {
            throw new java.nio.channels.ClosedChannelException();
        }
        return "tcp (the JDK's channel)";
    }

    /**
     * hadroNIO's version and the UCX it runs on, for example
     * {@code hadroNIO 0.1.0 (UCX 1.12.1, built against 1.12; available)}; when not active, the
     * version of this jar and why it is not in use.
     */
    public String version() {
        if (fallback == null) {
            return dev.hadronio.internal.Native.version();
        }
        String jar = HadronioProvider.class.getPackage().getImplementationVersion();
        return "hadroNIO " + (jar == null ? "(version unknown)" : jar) + " (not in use: " + problem() + ")";
    }

    /** Why hadroNIO could not start, with the fix, when {@link #isActive()} is false; else null. */
    public String problem() {
        return fallback == null ? null : NativeLoader.problem();
    }

    @Override
    public SocketChannel openSocketChannel() throws IOException {
        return fallback != null ? fallback.openSocketChannel() : new HadronioSocketChannel(this);
    }

    @Override
    public ServerSocketChannel openServerSocketChannel() throws IOException {
        return fallback != null ? fallback.openServerSocketChannel() : new HadronioServerSocketChannel(this);
    }

    /** Java 15+: TCP channels of either IP family; UNIX-domain channels are not supported. */
    public SocketChannel openSocketChannel(ProtocolFamily family) throws IOException {
        if (fallback != null) {
            return (SocketChannel) fallbackFor("openSocketChannel", family);
        }
        checkFamily(family);
        return openSocketChannel();
    }

    /** Java 15+: TCP server channels of either IP family. */
    public ServerSocketChannel openServerSocketChannel(ProtocolFamily family) throws IOException {
        if (fallback != null) {
            return (ServerSocketChannel) fallbackFor("openServerSocketChannel", family);
        }
        checkFamily(family);
        return openServerSocketChannel();
    }

    /** The fallback's Java 15+ method {@code name(ProtocolFamily)} (this class compiles for Java 11). */
    private Object fallbackFor(String name, ProtocolFamily family) throws IOException {
        try {
            return SelectorProvider.class.getMethod(name, ProtocolFamily.class).invoke(fallback, family);
        } catch (java.lang.reflect.InvocationTargetException e) {
            Throwable cause = e.getCause();
            if (cause instanceof IOException) {
                throw (IOException) cause;
            }
            if (cause instanceof RuntimeException) {
                throw (RuntimeException) cause;
            }
            throw new IOException(cause);
        } catch (ReflectiveOperationException e) {
            throw new UnsupportedOperationException(name + "(ProtocolFamily) needs Java 15 or later", e);
        }
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
        return fallback != null ? fallback.openSelector() : new HadronioSelector(this);
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
        return fallback != null ? fallback.inheritedChannel() : null;
    }

    private static volatile SelectorProvider jdk;

    /** The JDK's own provider, for the channel kinds hadroNIO does not implement. */
    private SelectorProvider jdk(String what) throws IOException {
        if (fallback != null) {
            return fallback;
        }
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
