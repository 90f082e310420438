package dev.hadronio.nio;

import dev.hadronio.internal.Native;
import java.nio.channels.CancelledKeyException;
import java.nio.channels.SelectableChannel;
import java.nio.channels.Selector;
import java.nio.channels.spi.AbstractSelectionKey;

/**
 * A registration of a hadroNIO channel with a {@link HadronioSelector}. Interest changes reach
 * the native selector at once, so a select in progress in another thread sees them.
 */
final class HadronioSelectionKey extends AbstractSelectionKey {
    private final SelectableChannel channel;
    private final HadronioSelector selector;
    final int index;
    private long nativeKey;
    private volatile int interestOps;
    volatile int readyOps;

    HadronioSelectionKey(SelectableChannel channel, HadronioSelector selector, int index) {
        this.channel = channel;
        this.selector = selector;
        this.index = index;
    }

    @Override
    public SelectableChannel channel() {
        return channel;
    }

    @Override
    public Selector selector() {
        return selector;
    }

    private void ensureValid() {
        if (!isValid()) {
            throw new CancelledKeyException();
        }
    }

    @Override
    public int interestOps() {
        ensureValid();
        return interestOps;
    }

    @Override
    public java.nio.channels.SelectionKey interestOps(int ops) {
        ensureValid();
        if ((ops & ~channel.validOps()) != 0) {
            throw new IllegalArgumentException("Invalid interest ops: " + ops);
        }
        // Event loops set the same interest after every write; an unchanged set changes nothing
        // natively either, and costs neither the monitor nor the native call.
        if (ops == interestOps) {
            return this;
        }
        synchronized (this) {
            interestOps = ops;
            if (nativeKey != 0) {
                Native.keyInterest(nativeKey, ops);
            }
        }
        return this;
    }

    @Override
    public int readyOps() {
        ensureValid();
        return readyOps;
    }

    /** Interest as last set, without the validity check (for the selector). */
    int interest() {
        return interestOps;
    }

    synchronized void attachNative(long key, int ops) {
        nativeKey = key;
        interestOps = ops;
    }

    /** Removes the native registration; returns false if there was none. */
    synchronized boolean detachNative(long selectorHandle) {
        long key = nativeKey;
        nativeKey = 0;
        if (key == 0) {
            return false;
        }
        Native.keyDeregister(selectorHandle, key);
        return true;
    }
}
