package dev.hadronio.examples.bench;

import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * A benchmark run in the shape Observatory uses: a result name, free-form key/value parameters and a list of
 * operations, each with modes, repetitions and iterations ({@code size}, {@code count}, {@code warmUp}).
 * Parameters this harness reads: {@code flavour} (blocking, selector, netty), {@code threshold} (messages between
 * flushes, netty), {@code threads} (netty event loops), {@code connections} (bulk transfer).
 */
public final class RunDescription {

    /** One size of one operation. */
    public static final class Iteration {
        public final int size;
        public final int count;
        public final int warmUp;

        public Iteration(int size, int count, int warmUp) {
            this.size = size;
            this.count = count;
            this.warmUp = warmUp;
        }
    }

    /** One operation with its modes, repetitions and iterations. */
    public static final class Operation {
        public final OperationKind kind;
        public final List<OperationMode> modes;
        public final int repetitions;
        public final List<Iteration> iterations;

        public Operation(OperationKind kind, List<OperationMode> modes, int repetitions, List<Iteration> iterations) {
            this.kind = kind;
            this.modes = Collections.unmodifiableList(new ArrayList<>(modes));
            this.repetitions = repetitions;
            this.iterations = Collections.unmodifiableList(new ArrayList<>(iterations));
        }
    }

    private final String resultName;
    private final Map<String, String> parameters;
    private final List<Operation> operations;

    public RunDescription(String resultName, Map<String, String> parameters, List<Operation> operations) {
        this.resultName = resultName;
        this.parameters = Collections.unmodifiableMap(new LinkedHashMap<>(parameters));
        this.operations = Collections.unmodifiableList(new ArrayList<>(operations));
    }

    public String resultName() {
        return resultName;
    }

    public Map<String, String> parameters() {
        return parameters;
    }

    /** A parameter's value, or {@code fallback} if absent. */
    public String parameter(String key, String fallback) {
        return parameters.getOrDefault(key, fallback);
    }

    /** A positive whole-number parameter, or {@code fallback} if absent. */
    public int intParameter(String key, int fallback) {
        String value = parameters.get(key);
        if (value == null) {
            return fallback;
        }
        try {
            int n = Integer.parseInt(value.trim());
            if (n >= 1) {
                return n;
            }
        } catch (NumberFormatException e) {
            // reported below
        }
        throw new IllegalArgumentException("parameter '" + key + "' must be a whole number >= 1, got '" + value + "'");
    }

    public List<Operation> operations() {
        return operations;
    }

    /** The largest message size of any iteration (buffers are sized once from it). */
    public int maxSize() {
        int max = 1;
        for (Operation op : operations) {
            for (Iteration it : op.iterations) {
                max = Math.max(max, it.size);
            }
        }
        return max;
    }

    /** A stable text form for comparing two sides' descriptions (not the JSON; order matters). */
    public String canonical() {
        StringBuilder b = new StringBuilder(resultName).append('|').append(parameters);
        for (Operation op : operations) {
            b.append('|').append(op.kind.jsonName()).append(op.modes).append(op.repetitions);
            for (Iteration it : op.iterations) {
                b.append(',').append(it.size).append('x').append(it.count).append('w').append(it.warmUp);
            }
        }
        return b.toString();
    }
}
