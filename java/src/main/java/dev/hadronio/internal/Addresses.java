package dev.hadronio.internal;

import java.net.Inet4Address;
import java.net.Inet6Address;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.SocketAddress;
import java.net.UnknownHostException;
import java.nio.channels.UnresolvedAddressException;
import java.nio.channels.UnsupportedAddressTypeException;

/** Conversions between {@link InetSocketAddress} and the native encoding. */
public final class Addresses {
    private Addresses() {
    }

    /** Checks an address argument as the JDK does. */
    public static InetSocketAddress check(SocketAddress address) {
        if (address == null) {
            throw new NullPointerException();
        }
        if (!(address instanceof InetSocketAddress)) {
            throw new UnsupportedAddressTypeException();
        }
        InetSocketAddress inet = (InetSocketAddress) address;
        if (inet.isUnresolved()) {
            throw new UnresolvedAddressException();
        }
        InetAddress ip = inet.getAddress();
        if (ip instanceof Inet6Address && !Config.get().ipv6) {
            throw new UnsupportedAddressTypeException();
        }
        return inet;
    }

    /** A connect to the wildcard address goes to the loopback address, as with the JDK. */
    public static InetSocketAddress remote(InetSocketAddress address) {
        if (address.getAddress().isAnyLocalAddress()) {
            InetAddress loopback = address.getAddress() instanceof Inet4Address
                ? InetAddress.getLoopbackAddress()
                : loopback6();
            return new InetSocketAddress(loopback, address.getPort());
        }
        return address;
    }

    private static InetAddress loopback6() {
        try {
            return InetAddress.getByAddress("localhost", new byte[] {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1});
        } catch (UnknownHostException e) {
            return InetAddress.getLoopbackAddress();
        }
    }

    public static byte[] ip(InetSocketAddress address) {
        return address.getAddress().getAddress();
    }

    public static int scope(InetSocketAddress address) {
        InetAddress ip = address.getAddress();
        return ip instanceof Inet6Address ? ((Inet6Address) ip).getScopeId() : 0;
    }

    /** The wildcard address to bind to when none is given. */
    public static InetSocketAddress any(int port) {
        return new InetSocketAddress(port);
    }

    /** Decodes {@code [ip length][ip][port: u16][scope id: u32]}; null stays null. */
    public static InetSocketAddress decode(byte[] encoded) {
        if (encoded == null) {
            return null;
        }
        int length = encoded[0];
        byte[] ip = new byte[length];
        System.arraycopy(encoded, 1, ip, 0, length);
        int port = ((encoded[1 + length] & 0xff) << 8) | (encoded[2 + length] & 0xff);
        int scope = ((encoded[3 + length] & 0xff) << 24) | ((encoded[4 + length] & 0xff) << 16)
            | ((encoded[5 + length] & 0xff) << 8) | (encoded[6 + length] & 0xff);
        try {
            InetAddress address = length == 16 && scope != 0
                ? Inet6Address.getByAddress(null, ip, scope)
                : InetAddress.getByAddress(ip);
            return new InetSocketAddress(address, port);
        } catch (UnknownHostException e) {
            throw new IllegalStateException("native code returned a malformed address", e);
        }
    }
}
