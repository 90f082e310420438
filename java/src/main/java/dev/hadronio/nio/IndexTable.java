package dev.hadronio.nio;

import java.util.concurrent.atomic.AtomicReferenceArray;
import java.util.function.IntFunction;

/**
 * Objects by the small integer index that native code reports them by (a selector's keys, the
 * virtual-thread poller's waits): looked up without a lock from the select loop, indexes reused
 * once released.
 */
final class IndexTable<T> {
    private final Object lock = new Object();
    private volatile AtomicReferenceArray<T> byIndex = new AtomicReferenceArray<>(64);
    private int[] free = new int[64];
    private int freeCount;
    private int next;

    /** Takes a free index, stores what {@code create} makes for it there and returns that. */
    T add(IntFunction<T> create) {
        synchronized (lock) {
            int index = freeCount > 0 ? free[--freeCount] : next++;
            AtomicReferenceArray<T> table = byIndex;
            if (index >= table.length()) {
                AtomicReferenceArray<T> grown = new AtomicReferenceArray<>(table.length() * 2);
                for (int i = 0; i < table.length(); i++) {
                    grown.set(i, table.get(i));
                }
                byIndex = grown;
                table = grown;
            }
            T value = create.apply(index);
            table.set(index, value);
            return value;
        }
    }

    /** What is stored at {@code index}, or null (released, or never handed out). */
    T get(int index) {
        AtomicReferenceArray<T> table = byIndex;
        return index >= 0 && index < table.length() ? table.get(index) : null;
    }

    /** Empties {@code index} and makes it free for the next {@link #add}. */
    void release(int index) {
        synchronized (lock) {
            byIndex.set(index, null);
            if (freeCount == free.length) {
                int[] grown = new int[free.length * 2];
                System.arraycopy(free, 0, grown, 0, freeCount);
                free = grown;
            }
            free[freeCount++] = index;
        }
    }
}
