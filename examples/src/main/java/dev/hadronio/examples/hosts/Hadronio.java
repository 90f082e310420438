package dev.hadronio.examples.hosts;

import java.nio.channels.SocketChannel;
import java.nio.channels.spi.SelectorProvider;
import java.util.Collections;
import java.util.Map;

/**
 * What the checks ask of the provider this JVM runs on, through reflection (the example application
 * has the provider jar at run time only): a connection's path and the counters.
 */
final class Hadronio {
    static final String PROVIDER = "dev.hadronio.HadronioProvider";

    private Hadronio() {
    }

    /** Whether this JVM's channels are hadroNIO's. */
    static boolean active() {
        return SelectorProvider.provider().getClass().getName().equals(PROVIDER);
    }

    /** hadroNIO's {@code transportOf(channel)}; for the JDK's channels "tcp (the JDK's channel)". */
    static String path(SocketChannel channel) {
        try {
            Class<?> provider = channel.provider().getClass();
            if (!provider.getName().equals(PROVIDER)) {
                return "tcp (the JDK's channel)";
            }
            return (String) provider.getMethod("transportOf", SocketChannel.class).invoke(null, channel);
        } catch (ReflectiveOperationException e) {
            return "unknown (" + e.getCause() + ")";
        }
    }

    /**
     * The UCX lane of the connection's endpoint that carries bulk RDMA ({@code rma_bw} in UCX's
     * description of the endpoint: the rendezvous protocol reads a large message with it), or null.
     */
    static String rdmaLane(SocketChannel channel) {
        try {
            String description = (String) channel.getClass().getMethod("transportDescription").invoke(channel);
            for (String line : description.split("\n")) {
                if (line.contains("rma_bw")) {
                    return line.trim().replaceAll("\\s+", " ");
                }
            }
            return null;
        } catch (ReflectiveOperationException e) {
            return null;
        }
    }

    /** Whether {@code path} is UCX over the network on an RDMA transport (not UCX's TCP). */
    static boolean overRdma(String path) {
        return path.startsWith("ucx over the network (") && !path.contains("(tcp/");
    }

    /** Whether the connection has decided its path (the upgrade is neither to come nor under way). */
    static boolean decided(String path) {
        return !path.equals("tcp (not upgraded yet)");
    }

    /** hadroNIO's counters by name; empty on the JDK's provider. */
    @SuppressWarnings("unchecked")
    static Map<String, Long> counters() {
        SelectorProvider provider = SelectorProvider.provider();
        if (!provider.getClass().getName().equals(PROVIDER)) {
            return Collections.emptyMap();
        }
        try {
            return (Map<String, Long>) provider.getClass().getMethod("counters").invoke(provider);
        } catch (ReflectiveOperationException e) {
            return Collections.emptyMap();
        }
    }

    /** How much counter {@code name} grew from {@code before} to now. */
    static long grown(Map<String, Long> before, String name) {
        return counters().getOrDefault(name, 0L) - before.getOrDefault(name, 0L);
    }
}
