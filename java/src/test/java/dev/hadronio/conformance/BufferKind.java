package dev.hadronio.conformance;

import java.nio.ByteBuffer;

/** Heap or direct {@link ByteBuffer}s: providers often take different paths for the two. */
enum BufferKind {
    HEAP {
        @Override
        ByteBuffer allocate(int capacity) {
            return ByteBuffer.allocate(capacity);
        }
    },
    DIRECT {
        @Override
        ByteBuffer allocate(int capacity) {
            return ByteBuffer.allocateDirect(capacity);
        }
    };

    abstract ByteBuffer allocate(int capacity);

    @Override
    public String toString() {
        return name().toLowerCase(java.util.Locale.ROOT);
    }
}
