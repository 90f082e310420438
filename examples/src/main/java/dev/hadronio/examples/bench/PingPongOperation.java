package dev.hadronio.examples.bench;

import dev.hadronio.examples.bench.RunDescription.Iteration;
import dev.hadronio.examples.report.LatencyStats;

import java.io.IOException;
import org.HdrHistogram.Histogram;

/** MessagingPingPong: the server sends a message and waits for the client's answer; every round trip is timed. */
final class PingPongOperation implements BenchOperation {

    @Override
    public long units(Iteration iteration) {
        return iteration.count;
    }

    @Override
    public void warmUp(BenchSession s, OperationMode mode, Iteration it) throws IOException {
        if (s.server) {
            s.main.ping(it.warmUp, it.size, null);
        } else {
            s.main.pong(it.warmUp, it.size);
        }
    }

    @Override
    public Measurement measure(BenchSession s, OperationMode mode, Iteration it) throws IOException {
        if (!s.server) {
            s.main.pong(it.count, it.size);
            return null;
        }
        Histogram rtts = LatencyStats.newHistogram();
        long start = System.nanoTime();
        BenchOperation.pingCounted(s, s.main, it.count, it.size, rtts);
        double seconds = (System.nanoTime() - start) / 1e9;
        return Measurement.latency(new LatencyStats(rtts), it.count / seconds);
    }
}
