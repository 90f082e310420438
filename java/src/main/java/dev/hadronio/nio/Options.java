package dev.hadronio.nio;

import dev.hadronio.internal.Native;
import java.net.SocketOption;
import java.net.StandardSocketOptions;

/** Encoding of the supported socket options for the native side, with the JDK's checks. */
final class Options {
    private Options() {
    }

    static int id(SocketOption<?> name) {
        if (name == StandardSocketOptions.TCP_NODELAY) {
            return Native.OPT_TCP_NODELAY;
        } else if (name == StandardSocketOptions.SO_SNDBUF) {
            return Native.OPT_SO_SNDBUF;
        } else if (name == StandardSocketOptions.SO_RCVBUF) {
            return Native.OPT_SO_RCVBUF;
        } else if (name == StandardSocketOptions.SO_KEEPALIVE) {
            return Native.OPT_SO_KEEPALIVE;
        } else if (name == StandardSocketOptions.SO_LINGER) {
            return Native.OPT_SO_LINGER;
        } else if (name == StandardSocketOptions.SO_REUSEADDR) {
            return Native.OPT_SO_REUSEADDR;
        } else if (name == StandardSocketOptions.IP_TOS) {
            return Native.OPT_IP_TOS;
        } else if (name == StandardSocketOptions.SO_REUSEPORT) {
            return Native.OPT_SO_REUSEPORT;
        }
        throw new UnsupportedOperationException("'" + name + "' not supported");
    }

    static <T> int encode(SocketOption<T> name, T value) {
        if (value == null || !name.type().isInstance(value)) {
            throw new IllegalArgumentException("Invalid value '" + value + "'");
        }
        if (value instanceof Boolean) {
            return (Boolean) value ? 1 : 0;
        }
        int number = (Integer) value;
        if (name == StandardSocketOptions.SO_SNDBUF || name == StandardSocketOptions.SO_RCVBUF) {
            if (number < 0) {
                throw new IllegalArgumentException("Invalid send/receive buffer size");
            }
        } else if (name == StandardSocketOptions.IP_TOS) {
            if (number < 0 || number > 255) {
                throw new IllegalArgumentException("Invalid IP_TOS value");
            }
        } else if (name == StandardSocketOptions.SO_LINGER) {
            number = number < 0 ? -1 : Math.min(number, 65535);
        }
        return number;
    }

    @SuppressWarnings("unchecked")
    static <T> T decode(SocketOption<T> name, int value) {
        if (name.type() == Boolean.class) {
            return (T) Boolean.valueOf(value != 0);
        }
        return (T) Integer.valueOf(value);
    }
}
