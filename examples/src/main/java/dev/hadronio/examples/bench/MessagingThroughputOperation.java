package dev.hadronio.examples.bench;

import dev.hadronio.examples.bench.RunDescription.Iteration;
import dev.hadronio.examples.util.Parallel;

import java.io.IOException;

/**
 * MessagingThroughput. Unidirectional: the server sends, the client receives; the server's clock runs from its
 * first write until the client reports (over the control connection) that the last byte arrived. Bidirectional:
 * each side sends on one thread and receives on another, each with its own buffer; each side times its own
 * sending the same way, and the reported throughput is the sum of both directions (as Observatory does).
 */
final class MessagingThroughputOperation implements BenchOperation {

    @Override
    public long units(Iteration iteration) {
        return iteration.count;
    }

    @Override
    public void warmUp(BenchSession s, OperationMode mode, Iteration it) throws IOException {
        if (it.warmUp == 0) {
            return;
        }
        if (mode == OperationMode.UNIDIRECTIONAL) {
            if (s.server) {
                s.main.sendMessages(it.warmUp, it.size, s.flushThreshold);
            } else {
                s.main.receiveMessages(it.warmUp, it.size);
            }
            return;
        }
        Parallel.run("warm-up", 2, i -> {
            if (i == 0) {
                s.main.sendMessages(it.warmUp, it.size, s.flushThreshold);
            } else {
                s.main.receiveMessages(it.warmUp, it.size);
            }
        });
    }

    @Override
    public Measurement measure(BenchSession s, OperationMode mode, Iteration it) throws IOException {
        double bytes = (double) it.count * it.size;
        if (mode == OperationMode.UNIDIRECTIONAL) {
            if (s.server) {
                long start = System.nanoTime();
                BenchOperation.sendCounted(s, s.main, it.count, it.size);
                s.control.awaitDone();
                double seconds = (System.nanoTime() - start) / 1e9;
                return Measurement.throughput(bytes / seconds, it.count / seconds);
            }
            s.main.receiveMessages(it.count, it.size);
            s.control.sendDone();
            return null;
        }
        long[] clock = new long[2];
        Parallel.run("direction", 3, i -> {
            if (i == 0) {
                clock[0] = System.nanoTime();
                BenchOperation.sendCounted(s, s.main, it.count, it.size);
            } else if (i == 1) {
                s.main.receiveMessages(it.count, it.size);
                s.control.sendDone();
            } else {
                s.control.awaitDone();
                clock[1] = System.nanoTime();
            }
        });
        double ours = (clock[1] - clock[0]) / 1e9;
        if (!s.server) {
            s.control.sendDoubles(ours);
            return null;
        }
        double theirs = s.control.receiveDoubles(1)[0];
        return Measurement.throughput(bytes / ours + bytes / theirs, it.count / ours + it.count / theirs);
    }
}
