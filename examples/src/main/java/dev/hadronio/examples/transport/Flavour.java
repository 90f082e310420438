package dev.hadronio.examples.transport;

import java.util.Locale;

/** How a benchmark drives its connections: the three ways applications use java.nio. */
public enum Flavour {
    /** Blocking {@code SocketChannel}s, one thread per direction. */
    BLOCKING,
    /** Non-blocking {@code SocketChannel}s waiting in a {@code Selector}. */
    SELECTOR,
    /** netty's NIO transport (which uses a Selector under the hood). */
    NETTY;

    /** Lower-case name as used on the command line and in run descriptions. */
    public String label() {
        return name().toLowerCase(Locale.ROOT);
    }

    /** Parses {@code blocking}, {@code selector} or {@code netty} (any case). */
    public static Flavour parse(String text) {
        for (Flavour f : values()) {
            if (f.label().equalsIgnoreCase(text)) {
                return f;
            }
        }
        throw new IllegalArgumentException("unknown flavour '" + text + "' (expected blocking, selector or netty)");
    }

    /** A factory for connections of this flavour; {@code threads} only matters for netty. */
    public TransportFactory newFactory(int threads) {
        switch (this) {
            case BLOCKING:
                return new ChannelTransportFactory(false);
            case SELECTOR:
                return new ChannelTransportFactory(true);
            case NETTY:
                return new NettyTransportFactory(threads);
            default:
                throw new IllegalStateException("unhandled flavour " + this);
        }
    }
}
