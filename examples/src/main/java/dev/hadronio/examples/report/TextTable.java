package dev.hadronio.examples.report;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

/**
 * A plain-text table with a header row and right-aligned columns (the first column left-aligned), for the
 * summaries printed at the end of every command.
 */
public final class TextTable {

    private final String[] header;
    private final List<String[]> rows = new ArrayList<>();
    private boolean textLast;

    public TextTable(String... header) {
        this.header = header.clone();
    }

    /** Adds a row; it must have as many cells as the header. */
    public TextTable row(String... cells) {
        if (cells.length != header.length) {
            throw new IllegalArgumentException("row has " + cells.length + " cells, header has " + header.length);
        }
        rows.add(cells.clone());
        return this;
    }

    /** Makes the last column free text: left-aligned and not padded, so a long cell widens no other row. */
    public TextTable textInLastColumn() {
        textLast = true;
        return this;
    }

    public boolean isEmpty() {
        return rows.isEmpty();
    }

    @Override
    public String toString() {
        int[] width = new int[header.length];
        for (int c = 0; c < header.length; c++) {
            width[c] = header[c].length();
        }
        for (String[] row : rows) {
            for (int c = 0; c < row.length; c++) {
                width[c] = Math.max(width[c], row[c].length());
            }
        }
        if (textLast) {
            width[width.length - 1] = header[header.length - 1].length();
        }
        StringBuilder out = new StringBuilder();
        appendRow(out, header, width, textLast);
        char[] rule = new char[Arrays.stream(width).sum() + 2 * (width.length - 1)];
        Arrays.fill(rule, '-');
        out.append(rule).append(System.lineSeparator());
        for (String[] row : rows) {
            appendRow(out, row, width, textLast);
        }
        return out.toString();
    }

    private static void appendRow(StringBuilder out, String[] cells, int[] width, boolean textLast) {
        for (int c = 0; c < cells.length; c++) {
            if (c > 0) {
                out.append("  ");
            }
            String cell = cells[c];
            int pad = Math.max(0, width[c] - cell.length());
            if (c == cells.length - 1 && textLast) {
                out.append(cell);
            } else if (c == 0) {
                out.append(cell);
                if (c < cells.length - 1) {
                    out.append(" ".repeat(pad));
                }
            } else {
                out.append(" ".repeat(pad)).append(cell);
            }
        }
        out.append(System.lineSeparator());
    }
}
