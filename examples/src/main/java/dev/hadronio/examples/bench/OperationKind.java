package dev.hadronio.examples.bench;

/** The operations a run description may name (Observatory's names plus our bulk transfer). */
public enum OperationKind {
    /** Many messages in one direction (or both), timed until the receiver has them all. */
    MESSAGING_THROUGHPUT("MessagingThroughput", "Messaging Throughput", false),
    /** Round trips of one message each way, every one timed. */
    MESSAGING_PING_PONG("MessagingPingPong", "Messaging PingPong", true),
    /** Several GiB over N connections with one thread each, large buffers. */
    BULK_TRANSFER("BulkTransfer", "Bulk Transfer", false);

    private final String jsonName;
    private final String fileName;
    private final boolean latency;

    OperationKind(String jsonName, String fileName, boolean latency) {
        this.jsonName = jsonName;
        this.fileName = fileName;
        this.latency = latency;
    }

    /** The name in the run description. */
    public String jsonName() {
        return jsonName;
    }

    /** The CSV file name (without ".csv"), as Observatory names it; bidirectional runs add a prefix. */
    public String fileName(OperationMode mode) {
        return mode == OperationMode.BIDIRECTIONAL ? "Bidirectional " + fileName : fileName;
    }

    /** True if the operation reports latencies (else throughput). */
    public boolean isLatency() {
        return latency;
    }

    public boolean allows(OperationMode mode) {
        return mode == OperationMode.UNIDIRECTIONAL || this == MESSAGING_THROUGHPUT;
    }

    static OperationKind fromJson(String name) {
        for (OperationKind k : values()) {
            if (k.jsonName.equals(name)) {
                return k;
            }
        }
        return null;
    }

    static String names() {
        StringBuilder b = new StringBuilder();
        for (OperationKind k : values()) {
            b.append(b.length() == 0 ? "" : ", ").append(k.jsonName);
        }
        return b.toString();
    }
}
