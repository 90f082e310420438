package dev.hadronio.internal;

import java.io.EOFException;
import java.io.IOException;
import java.net.BindException;
import java.net.ConnectException;
import java.net.SocketException;
import java.net.SocketTimeoutException;
import java.nio.channels.ClosedChannelException;
import java.nio.channels.ConnectionPendingException;
import java.nio.channels.NotYetConnectedException;

/**
 * Negative status codes returned by the hot-path native methods and the exceptions they stand
 * for. KEEP IN SYNC: native/src/core/error.rs (a test compares against {@link Native#statusNames()}).
 */
public final class Status {
    public static final int EOF = -1;
    public static final int CLOSED = -2;
    public static final int NOT_CONNECTED = -3;
    public static final int RESET = -4;
    public static final int BROKEN_PIPE = -5;
    public static final int TIMED_OUT = -6;
    public static final int REFUSED = -7;
    public static final int PROTOCOL = -8;
    public static final int OUTPUT_SHUTDOWN = -9;
    public static final int IO = -10;
    public static final int BAD_HANDLE = -11;
    public static final int INVALID = -12;
    public static final int PENDING = -13;
    public static final int INTERNAL = -14;
    public static final int BIND = -15;

    /** Names in code order: {@code NAMES[i]} is the name of code {@code -(i + 1)}. */
    public static final String[] NAMES = {
        "EOF", "CLOSED", "NOT_CONNECTED", "RESET", "BROKEN_PIPE", "TIMED_OUT", "REFUSED", "PROTOCOL",
        "OUTPUT_SHUTDOWN", "IO", "BAD_HANDLE", "INVALID", "PENDING", "INTERNAL", "BIND",
    };

    private Status() {
    }

    /**
     * Drops the message of a failed call whose failure needs no exception: a write that already
     * moved bytes, say, or a wakeup; the next call reports it again if it lasts.
     */
    public static void ignore(long code) {
        if (code < 0) {
            Native.lastError();
        }
    }

    /**
     * A read's result: the count, -1 at the end of the stream, 0 for a blocking read ended by a
     * close (the caller's {@code end()} then throws {@code AsynchronousCloseException}), else the
     * exception.
     */
    public static int readResult(long n, boolean blocking) throws IOException {
        if (n >= 0) {
            return (int) n;
        }
        if (n == EOF) {
            return -1;
        }
        if (n == CLOSED) {
            ignore(n);
            if (!blocking) {
                throw new ClosedChannelException();
            }
            return 0;
        }
        throw exception(n);
    }

    /**
     * A write's result: the count, 0 for a write ended by a close or a shutdown of the output
     * (the caller turns that into the exception the JDK throws), else the exception.
     */
    public static int writeResult(long n, boolean blocking) throws IOException {
        if (n >= 0) {
            return (int) n;
        }
        if (n == CLOSED || n == OUTPUT_SHUTDOWN) {
            ignore(n);
            if (!blocking && n == CLOSED) {
                throw new ClosedChannelException();
            }
            return 0;
        }
        throw exception(n);
    }

    /**
     * The exception for a negative status code returned on this thread; the message comes from
     * {@link Native#lastError()}. {@code CLOSED} maps to {@link ClosedChannelException}: callers
     * that were blocked turn it into {@code AsynchronousCloseException} through {@code end()}.
     */
    public static IOException exception(long code) {
        String message = Native.lastError();
        if (message == null) {
            message = "hadroNIO status " + code;
        }
        switch ((int) code) {
            case EOF:
                return new EOFException(message);
            case CLOSED:
            case OUTPUT_SHUTDOWN:
                return new ClosedChannelException();
            case TIMED_OUT:
                return new SocketTimeoutException(message);
            case REFUSED:
                return new ConnectException(message);
            case RESET:
                return new SocketException(message);
            case BIND:
                return new BindException(message);
            case NOT_CONNECTED:
                throw new NotYetConnectedException();
            case PENDING:
                throw new ConnectionPendingException();
            case BAD_HANDLE:
                throw new IllegalStateException(message);
            case INVALID:
                throw new IllegalArgumentException(message);
            case INTERNAL:
                throw new Error(message);
            default:
                return new IOException(message);
        }
    }
}
