package dev.hadronio.examples.bench;

import dev.hadronio.examples.bench.RunDescription.Iteration;
import dev.hadronio.examples.transport.MessageTransport;
import dev.hadronio.examples.util.Parallel;

import java.io.IOException;
import java.util.List;

/**
 * BulkTransfer: N threads on the server, each on its own connection, send {@code count} buffers of {@code size}
 * bytes in total (split evenly) to N receiving threads on the client. Timed from the first write until the client
 * reports that every connection has received everything. N is the {@code connections} parameter.
 */
final class BulkTransferOperation implements BenchOperation {

    static final String CONNECTIONS_PARAMETER = "connections";
    static final int DEFAULT_CONNECTIONS = 2;

    private final int connections;

    BulkTransferOperation(int connections) {
        this.connections = connections;
    }

    @Override
    public long units(Iteration iteration) {
        return iteration.count;
    }

    @Override
    public void prepare(BenchSession s) throws IOException {
        s.bulkConnections(connections);
    }

    static int share(int count, int connections, int index) {
        return count / connections + (index < count % connections ? 1 : 0);
    }

    @Override
    public void warmUp(BenchSession s, OperationMode mode, Iteration it) throws IOException {
        transfer(s, it.warmUp, it.size, false);
    }

    @Override
    public Measurement measure(BenchSession s, OperationMode mode, Iteration it) throws IOException {
        long start = System.nanoTime();
        transfer(s, it.count, it.size, true);
        if (!s.server) {
            s.control.sendDone();
            return null;
        }
        s.control.awaitDone();
        double seconds = (System.nanoTime() - start) / 1e9;
        return Measurement.throughput((double) it.count * it.size / seconds, it.count / seconds);
    }

    private void transfer(BenchSession s, int count, int size, boolean counted) throws IOException {
        List<MessageTransport> links = s.bulkConnections(connections);
        Parallel.run("bulk", connections, i -> {
            int n = share(count, connections, i);
            MessageTransport t = links.get(i);
            if (!s.server) {
                t.receiveMessages(n, size);
            } else if (counted) {
                BenchOperation.sendCounted(s, t, n, size);
            } else {
                t.sendMessages(n, size, s.flushThreshold);
            }
        });
    }
}
