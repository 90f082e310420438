package dev.hadronio.nio;

import java.io.IOException;
import java.net.SocketException;
import java.net.UnknownHostException;
import java.nio.channels.AlreadyBoundException;
import java.nio.channels.ClosedChannelException;
import java.nio.channels.NotYetBoundException;
import java.nio.channels.NotYetConnectedException;
import java.nio.channels.UnresolvedAddressException;
import java.nio.channels.UnsupportedAddressTypeException;

/** Translates channel exceptions into the {@code java.net} ones socket adaptors throw. */
final class Translate {
    private Translate() {
    }

    static IOException exception(Exception e) {
        if (e instanceof ClosedChannelException) {
            return cause(new SocketException("Socket is closed"), e);
        } else if (e instanceof NotYetConnectedException) {
            return cause(new SocketException("Socket is not connected"), e);
        } else if (e instanceof AlreadyBoundException) {
            return cause(new SocketException("Already bound"), e);
        } else if (e instanceof NotYetBoundException) {
            return cause(new SocketException("Socket is not bound yet"), e);
        } else if (e instanceof UnsupportedAddressTypeException) {
            return cause(new SocketException("Unsupported address type"), e);
        } else if (e instanceof UnresolvedAddressException) {
            return cause(new UnknownHostException("Unresolved address"), e);
        } else if (e instanceof IOException) {
            return (IOException) e;
        } else if (e instanceof RuntimeException) {
            throw (RuntimeException) e;
        }
        return new IOException(e);
    }

    private static IOException cause(IOException exception, Exception cause) {
        exception.initCause(cause);
        return exception;
    }
}
