package dev.hadronio.internal;

/**
 * Every native method of hadroNIO, implemented by {@code libhadronio.so} (native/src/jni).
 *
 * <p>Handles are {@code long}s owned by the Java object that created them; {@code *Destroy}
 * releases one (the library frees it after the calls still running on it) and must not be
 * followed by any other call on it.
 * Hot-path methods ({@link #connRead}, {@link #connReadv}, {@link #connWrite},
 * {@link #connWritev}, {@link #selectorSelect}, {@link #selectorWakeup}, {@link #keyInterest})
 * return {@code >= 0} for a count and a negative {@link Status} code otherwise; the message of a
 * failure is {@link #lastError()} on the same thread. All other methods throw the JDK exception
 * that fits. Reads and writes ({@code conn*Read*}, {@code conn*Write*}) must be called inside a
 * borrow of the channel's handle ({@code NativeHandle.enter} .. {@code leave}), which keeps
 * {@link #connDestroy} from running meanwhile: the library does not count their borrow again
 * (native/src/jni/handle.rs, {@code lent}).
 *
 * <p>Addresses are passed as the raw IP bytes (4 or 16), the IPv6 scope id and the port, and
 * returned encoded as {@code [ip length][ip][port: u16][scope id: u32]} (big-endian).
 */
public final class Native {
    /** Socket option identifiers. KEEP IN SYNC: native/src/core/conn/options.rs */
    public static final int OPT_TCP_NODELAY = 1;
    public static final int OPT_SO_SNDBUF = 2;
    public static final int OPT_SO_RCVBUF = 3;
    public static final int OPT_SO_KEEPALIVE = 4;
    public static final int OPT_SO_LINGER = 5;
    public static final int OPT_SO_REUSEADDR = 6;
    public static final int OPT_IP_TOS = 7;
    public static final int OPT_SO_REUSEPORT = 8;

    private Native() {
    }

    static native void init(long[] settings, byte[] secret, String rules);

    public static native String version();

    public static native String[] statusNames();

    /** The names of hadroNIO's counters, in {@link #counters()} order. */
    public static native String[] counterNames();

    /** What each counter counts, in {@link #counters()} order. */
    public static native String[] counterDescriptions();

    /**
     * Lowers the calling thread's scheduling priority: for threads that prepare what the
     * application may need later, so that the application's own threads go first.
     */
    static native void yieldToApplication();

    /** Every counter's total since the library loaded (see {@code Counters}). */
    public static native long[] counters();

    public static native String lastError();

    static native long bufferAddress(java.nio.ByteBuffer direct);

    /** The JDK's own {@code SelectorProvider}, reached without {@code --add-exports}. */
    public static native java.nio.channels.spi.SelectorProvider jdkSelectorProvider();

    public static native long connOpen();

    public static native void connBind(long handle, byte[] ip, int scopeId, int port);

    public static native int connConnect(long handle, byte[] ip, int scopeId, int port, boolean blocking, long timeoutMillis);

    public static native int connFinishConnect(long handle, boolean blocking);

    public static native int connRead(long handle, long address, int length, boolean blocking, long timeoutMillis);

    public static native long connReadv(long handle, long iov, int count, boolean blocking, long timeoutMillis);

    public static native int connWrite(long handle, long address, int length, boolean blocking);

    public static native long connWritev(long handle, long iov, int count, boolean blocking);

    public static native void connShutdown(long handle, boolean input, boolean output);

    public static native void connClose(long handle);

    public static native void connDestroy(long handle);

    public static native byte[] connLocalAddress(long handle);

    public static native byte[] connRemoteAddress(long handle);

    public static native void connSetOption(long handle, int option, int value);

    public static native int connGetOption(long handle, int option);

    public static native String connDescribe(long handle);

    public static native long listenerOpen();

    public static native void listenerBind(long handle, byte[] ip, int scopeId, int port, int backlog);

    public static native long listenerAccept(long handle, boolean blocking, long timeoutMillis);

    public static native byte[] listenerLocalAddress(long handle);

    public static native void listenerSetOption(long handle, int option, int value);

    public static native int listenerGetOption(long handle, int option);

    public static native void listenerClose(long handle);

    public static native void listenerDestroy(long handle);

    public static native long selectorOpen();

    public static native int selectorSelect(long handle, long timeoutMillis, long out, int capacity);

    public static native int selectorWakeup(long handle);

    public static native void selectorClose(long handle);

    public static native void selectorDestroy(long handle);

    public static native long keyRegister(long selector, long channel, boolean listener, int index, int interest);

    public static native int keyInterest(long key, int ops);

    public static native void keyDeregister(long selector, long key);
}
