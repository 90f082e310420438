package dev.hadronio.examples.report;

import java.io.BufferedWriter;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.List;
import java.util.Locale;

/**
 * Result files in Observatory's format: comma-separated, a header line, numbers as {@code %.12e}. Rows are
 * appended (the header is written when the file is new); an existing file with a different header is refused
 * rather than mixed.
 */
public final class CsvFile {

    private final List<String> header;
    private final List<List<String>> rows;

    private CsvFile(List<String> header, List<List<String>> rows) {
        this.header = header;
        this.rows = rows;
    }

    public List<String> header() {
        return header;
    }

    public List<List<String>> rows() {
        return rows;
    }

    /** The index of a column, or -1. */
    public int column(String name) {
        return header.indexOf(name);
    }

    /** Formats a value as Observatory does. */
    public static String number(double value) {
        return String.format(Locale.ROOT, "%.12e", value);
    }

    /** Appends one row, creating the file (and its directory) with {@code header} if needed. */
    public static void append(Path file, List<String> header, List<String> row) throws IOException {
        if (row.size() != header.size()) {
            throw new IllegalArgumentException("row has " + row.size() + " cells, header " + header.size());
        }
        for (String cell : row) {
            if (cell.indexOf(',') >= 0 || cell.indexOf('\n') >= 0 || cell.indexOf('"') >= 0) {
                throw new IllegalArgumentException("CSV cell must not contain a comma, quote or newline: '"
                        + cell + "'");
            }
        }
        Path dir = file.toAbsolutePath().getParent();
        if (dir != null) {
            Files.createDirectories(dir);
        }
        boolean fresh = !Files.exists(file) || Files.size(file) == 0;
        if (!fresh) {
            List<String> existing = read(file).header;
            if (!existing.equals(header)) {
                throw new IOException("existing result file " + file + " has the columns " + existing
                        + ", not " + header + "; use another result directory");
            }
        }
        try (BufferedWriter w = Files.newBufferedWriter(file, StandardCharsets.UTF_8, StandardOpenOption.CREATE,
                StandardOpenOption.APPEND)) {
            if (fresh) {
                w.write(String.join(",", header));
                w.newLine();
            }
            w.write(String.join(",", row));
            w.newLine();
        }
    }

    /** Reads a whole file; rows with the wrong number of cells are an error naming the line. */
    public static CsvFile read(Path file) throws IOException {
        List<String> lines = Files.readAllLines(file, StandardCharsets.UTF_8);
        if (lines.isEmpty()) {
            throw new IOException("result file " + file + " is empty");
        }
        List<String> header = split(lines.get(0));
        List<List<String>> rows = new ArrayList<>();
        for (int i = 1; i < lines.size(); i++) {
            if (lines.get(i).trim().isEmpty()) {
                continue;
            }
            List<String> row = split(lines.get(i));
            if (row.size() != header.size()) {
                throw new IOException(file + " line " + (i + 1) + " has " + row.size() + " cells, the header "
                        + header.size());
            }
            rows.add(row);
        }
        return new CsvFile(Collections.unmodifiableList(header), Collections.unmodifiableList(rows));
    }

    private static List<String> split(String line) {
        return Arrays.asList(line.split(",", -1));
    }
}
