package dev.hadronio.examples.bench;

import dev.hadronio.examples.report.CsvFile;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * One line of a result file: operation (the file's name), benchmark label, repetition, size and the values by
 * column name. Made by the bench server after each step, or read back from a result directory.
 */
public final class ResultRow {

    public final String operation;
    public final String benchmark;
    public final int repetition;
    public final int size;
    public final Map<String, Double> values;

    public ResultRow(String operation, String benchmark, int repetition, int size, Map<String, Double> values) {
        this.operation = operation;
        this.benchmark = benchmark;
        this.repetition = repetition;
        this.size = size;
        this.values = Collections.unmodifiableMap(new LinkedHashMap<>(values));
    }

    /** A value, or NaN if the row has no such column. */
    public double value(String column) {
        Double v = values.get(column);
        return v == null ? Double.NaN : v;
    }

    public boolean isLatency() {
        return values.containsKey(ResultColumns.AVERAGE);
    }

    /** The CSV cells in the order of {@code header}. */
    List<String> cells(List<String> header) {
        List<String> cells = new ArrayList<>(header.size());
        cells.add(benchmark);
        cells.add(Integer.toString(repetition));
        cells.add(Integer.toString(size));
        for (String column : header.subList(3, header.size())) {
            cells.add(CsvFile.number(value(column)));
        }
        return cells;
    }

    /** Appends this row to {@code dir/<operation>.csv}. */
    void appendTo(Path dir, OperationKind kind) throws IOException {
        List<String> header = ResultColumns.header(kind);
        CsvFile.append(dir.resolve(operation + ".csv"), header, cells(header));
    }

    /** Every row of every known result file in {@code dir} (missing files are skipped). */
    public static List<ResultRow> readDirectory(Path dir) throws IOException {
        List<ResultRow> rows = new ArrayList<>();
        for (OperationKind kind : OperationKind.values()) {
            for (OperationMode mode : OperationMode.values()) {
                if (!kind.allows(mode)) {
                    continue;
                }
                String operation = kind.fileName(mode);
                Path file = dir.resolve(operation + ".csv");
                if (Files.exists(file)) {
                    rows.addAll(read(file, operation));
                }
            }
        }
        return rows;
    }

    private static List<ResultRow> read(Path file, String operation) throws IOException {
        CsvFile csv = CsvFile.read(file);
        List<String> header = csv.header();
        if (header.size() < 4 || !header.subList(0, 3).equals(Arrays.asList(ResultColumns.BENCHMARK,
                ResultColumns.ITERATION, ResultColumns.SIZE))) {
            throw new IOException(file + " does not start with the columns Benchmark,Iteration,Size");
        }
        List<ResultRow> rows = new ArrayList<>();
        for (List<String> cells : csv.rows()) {
            try {
                Map<String, Double> values = new LinkedHashMap<>();
                for (int c = 3; c < header.size(); c++) {
                    values.put(header.get(c), Double.parseDouble(cells.get(c)));
                }
                rows.add(new ResultRow(operation, cells.get(0), Integer.parseInt(cells.get(1)),
                        Integer.parseInt(cells.get(2)), values));
            } catch (NumberFormatException e) {
                throw new IOException(file + ": bad number in row " + cells, e);
            }
        }
        return rows;
    }
}
