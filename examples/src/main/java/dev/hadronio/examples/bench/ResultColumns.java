package dev.hadronio.examples.bench;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.List;

/**
 * CSV columns in Observatory's order: {@code Benchmark,Iteration,Size}, then the operation's values sorted by
 * name (Observatory keeps them in a TreeMap, hence "9999thLatency" before "999thLatency"), then our CPU columns.
 * Units: bytes/s, operations/s, seconds.
 */
public final class ResultColumns {

    public static final String BENCHMARK = "Benchmark";
    public static final String ITERATION = "Iteration";
    public static final String SIZE = "Size";

    public static final String DATA_THROUGHPUT = "DataThroughput";
    public static final String OPERATION_THROUGHPUT = "OperationThroughput";
    public static final String P50 = "50thLatency";
    public static final String P95 = "95thLatency";
    public static final String P99 = "99thLatency";
    public static final String P999 = "999thLatency";
    public static final String P9999 = "9999thLatency";
    public static final String AVERAGE = "AverageLatency";
    public static final String MINIMUM = "MinimumLatency";
    public static final String MAXIMUM = "MaximumLatency";
    public static final String SERVER_CPU = "ServerCpuTimePerOperation";
    public static final String CLIENT_CPU = "ClientCpuTimePerOperation";

    /** Observatory's value columns of a throughput operation, in its order. */
    public static final List<String> THROUGHPUT = Collections.unmodifiableList(Arrays.asList(
            DATA_THROUGHPUT, OPERATION_THROUGHPUT));

    /** Observatory's value columns of a latency operation, in its (TreeMap) order. */
    public static final List<String> LATENCY = Collections.unmodifiableList(Arrays.asList(
            P50, P95, P9999, P999, P99, AVERAGE, MAXIMUM, MINIMUM, OPERATION_THROUGHPUT));

    /** Appended after Observatory's columns: process CPU time per operation on each side. */
    public static final List<String> CPU = Collections.unmodifiableList(Arrays.asList(SERVER_CPU, CLIENT_CPU));

    private ResultColumns() {
    }

    /** The value columns (after Benchmark, Iteration, Size) of an operation. */
    public static List<String> values(OperationKind kind) {
        List<String> columns = new ArrayList<>(kind.isLatency() ? LATENCY : THROUGHPUT);
        columns.addAll(CPU);
        return columns;
    }

    /** The whole header of an operation's CSV file. */
    public static List<String> header(OperationKind kind) {
        List<String> columns = new ArrayList<>(Arrays.asList(BENCHMARK, ITERATION, SIZE));
        columns.addAll(values(kind));
        return columns;
    }
}
