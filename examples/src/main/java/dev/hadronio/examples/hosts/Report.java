package dev.hadronio.examples.hosts;

import java.io.IOException;
import java.io.Writer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;

/** The checks' outcomes: a table for people and a JUnit XML report for CI. */
final class Report {
    /** One check's outcome. */
    static final class Outcome {
        final Check check;
        final boolean passed;
        final boolean skipped;
        final String detail;
        final double seconds;

        Outcome(Check check, boolean passed, boolean skipped, String detail, double seconds) {
            this.check = check;
            this.passed = passed;
            this.skipped = skipped;
            this.detail = detail;
            this.seconds = seconds;
        }

        String result() {
            return skipped ? "skipped" : passed ? "ok" : "FAILED";
        }
    }

    final List<Outcome> outcomes = new ArrayList<>();

    boolean passed() {
        return outcomes.stream().allMatch(o -> o.passed || o.skipped);
    }

    String table() {
        dev.hadronio.examples.report.TextTable table = new dev.hadronio.examples.report.TextTable("check", "result", "time", "detail").textInLastColumn();
        for (Outcome o : outcomes) {
            table.row(o.check.title, o.result(), String.format(Locale.ROOT, "%.1f s", o.seconds), o.detail);
        }
        return table + String.format(Locale.ROOT, "%d passed, %d failed, %d skipped%n", outcomes.size() - failed() - skipped(), failed(),
                skipped());
    }

    long failed() {
        return outcomes.stream().filter(o -> !o.passed && !o.skipped).count();
    }

    long skipped() {
        return outcomes.stream().filter(o -> o.skipped).count();
    }

    void writeJunit(Path file, String suite) throws IOException {
        double total = outcomes.stream().mapToDouble(o -> o.seconds).sum();
        Files.createDirectories(file.toAbsolutePath().getParent());
        try (Writer out = Files.newBufferedWriter(file, StandardCharsets.UTF_8)) {
            out.write(String.format(Locale.ROOT, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>%n"
                    + "<testsuite name=\"%s\" tests=\"%d\" skipped=\"%d\" failures=\"%d\" errors=\"0\" time=\"%.3f\">%n",
                    xml(suite), outcomes.size(), skipped(), failed(), total));
            for (Outcome o : outcomes) {
                out.write(String.format(Locale.ROOT, "  <testcase classname=\"%s\" name=\"%s\" time=\"%.3f\">", xml(suite),
                        xml(o.check.name), o.seconds));
                if (o.skipped) {
                    out.write(String.format("<skipped message=\"%s\"/>", xml(o.detail)));
                } else if (o.passed) {
                    out.write(String.format("<system-out>%s</system-out>", xml(o.detail)));
                } else {
                    out.write(String.format("<failure message=\"%s\"/>", xml(o.detail)));
                }
                out.write(String.format("</testcase>%n"));
            }
            out.write(String.format("</testsuite>%n"));
        }
    }

    private static String xml(String text) {
        StringBuilder out = new StringBuilder();
        for (char c : text.toCharArray()) {
            switch (c) {
                case '<': out.append("&lt;"); break;
                case '>': out.append("&gt;"); break;
                case '&': out.append("&amp;"); break;
                case '"': out.append("&quot;"); break;
                default:
                    if (c >= 0x20 || c == '\n' || c == '\t') {
                        out.append(c);
                    }
            }
        }
        return out.toString();
    }
}
