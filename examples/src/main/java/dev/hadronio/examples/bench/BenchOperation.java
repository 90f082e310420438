package dev.hadronio.examples.bench;

import dev.hadronio.examples.bench.RunDescription.Iteration;
import dev.hadronio.examples.transport.MessageTransport;
import org.HdrHistogram.Histogram;

import java.io.IOException;

/**
 * One operation of the harness, run by both processes in lock step. The runner puts a barrier before
 * {@link #prepare}, between {@link #warmUp} and {@link #measure}, and around nothing inside {@code measure}.
 */
interface BenchOperation {

    /** Work units (for progress) of one measured step. */
    long units(Iteration iteration);

    /** Sets up connections the operation needs (both sides call it right after the same barrier). */
    default void prepare(BenchSession session) throws IOException {
    }

    /** The same traffic as {@link #measure}, {@code iteration.warmUp} units, not recorded. */
    void warmUp(BenchSession session, OperationMode mode, Iteration iteration) throws IOException;

    /** Runs the measured traffic; the server returns the figures, the client null. */
    Measurement measure(BenchSession session, OperationMode mode, Iteration iteration) throws IOException;

    /** Messages per call between progress updates: small enough to show progress, large enough to cost nothing. */
    int CHUNK = 4096;

    /** Bytes per call between progress updates for large messages. */
    int CHUNK_BYTES = 16 * 1024 * 1024;

    /** Sends {@code count} messages in chunks, publishing progress after each chunk. */
    static void sendCounted(BenchSession s, MessageTransport t, int count, int size) throws IOException {
        int chunk = Math.max(1, Math.min(CHUNK, CHUNK_BYTES / size));
        int done = 0;
        while (done < count) {
            int n = Math.min(chunk, count - done);
            t.sendMessages(n, size, s.flushThreshold);
            done += n;
            s.progress.addAndGet(n);
        }
    }

    /** Round trips in chunks, publishing progress after each chunk. */
    static void pingCounted(BenchSession s, MessageTransport t, int count, int size, Histogram rtts)
            throws IOException {
        int done = 0;
        while (done < count) {
            int n = Math.min(CHUNK / 4, count - done);
            t.ping(n, size, rtts);
            done += n;
            s.progress.addAndGet(n);
        }
    }
}
