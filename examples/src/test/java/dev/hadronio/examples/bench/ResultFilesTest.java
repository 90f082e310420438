package dev.hadronio.examples.bench;

import dev.hadronio.examples.report.CsvFile;
import dev.hadronio.examples.report.LatencyStats;
import org.HdrHistogram.Histogram;
import org.junit.Rule;
import org.junit.Test;
import org.junit.rules.TemporaryFolder;

import javax.imageio.ImageIO;
import java.awt.image.BufferedImage;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertNotNull;
import static org.junit.Assert.assertTrue;
import static org.junit.Assert.fail;

public class ResultFilesTest {

    @Rule
    public TemporaryFolder temp = new TemporaryFolder();

    @Test
    public void latencyColumnsAreInObservatoryTreeMapOrder() {
        List<String> sorted = new ArrayList<>(new TreeMap<String, Object>(keys(ResultColumns.LATENCY)).keySet());
        assertEquals(sorted, ResultColumns.LATENCY);
        assertEquals(Arrays.asList("Benchmark", "Iteration", "Size", "DataThroughput", "OperationThroughput",
                "ServerCpuTimePerOperation", "ClientCpuTimePerOperation"),
                ResultColumns.header(OperationKind.MESSAGING_THROUGHPUT));
    }

    @Test
    public void csvAppendsUnderOneHeaderAndRefusesAnotherHeader() throws IOException {
        Path file = temp.getRoot().toPath().resolve("sub/Messaging Throughput.csv");
        List<String> header = Arrays.asList("Benchmark", "Iteration", "Size", "DataThroughput");
        CsvFile.append(file, header, Arrays.asList("JDK", "0", "64", CsvFile.number(1.5e9)));
        CsvFile.append(file, header, Arrays.asList("JDK", "1", "64", CsvFile.number(2.0e9)));
        List<String> lines = Files.readAllLines(file, StandardCharsets.UTF_8);
        assertEquals(Arrays.asList("Benchmark,Iteration,Size,DataThroughput",
                "JDK,0,64,1.500000000000e+09", "JDK,1,64,2.000000000000e+09"), lines);
        try {
            CsvFile.append(file, Arrays.asList("Benchmark", "Iteration", "Size", "Other"),
                    Arrays.asList("JDK", "0", "64", "1"));
            fail("mixed two headers in one file");
        } catch (IOException e) {
            assertTrue(e.getMessage(), e.getMessage().contains("use another result directory"));
        }
        try {
            CsvFile.append(file, header, Arrays.asList("a,b", "0", "64", "1"));
            fail("wrote a comma inside a cell");
        } catch (IllegalArgumentException e) {
            assertTrue(e.getMessage().contains("comma"));
        }
    }

    @Test
    public void rowsRoundTripThroughTheResultDirectory() throws IOException {
        Path dir = temp.getRoot().toPath();
        latencyRow("JDK blocking", 0, 64, 6e-6).appendTo(dir, OperationKind.MESSAGING_PING_PONG);
        latencyRow("JDK blocking", 1, 64, 8e-6).appendTo(dir, OperationKind.MESSAGING_PING_PONG);
        latencyRow("JDK blocking", 2, 64, 7e-6).appendTo(dir, OperationKind.MESSAGING_PING_PONG);
        throughputRow("JDK blocking", 64, 1e8).appendTo(dir, OperationKind.MESSAGING_THROUGHPUT);

        List<String> lines = Files.readAllLines(dir.resolve("Messaging PingPong.csv"), StandardCharsets.UTF_8);
        assertEquals("Benchmark,Iteration,Size,50thLatency,95thLatency,9999thLatency,999thLatency,99thLatency,"
                + "AverageLatency,MaximumLatency,MinimumLatency,OperationThroughput,ServerCpuTimePerOperation,"
                + "ClientCpuTimePerOperation", lines.get(0));
        assertEquals(4, lines.size());

        List<ResultRow> rows = ResultRow.readDirectory(dir);
        assertEquals(4, rows.size());
        List<ResultRow> medians = ResultSummary.medians(rows);
        assertEquals(2, medians.size());
        ResultRow pingPong = medians.stream().filter(ResultRow::isLatency).findFirst().get();
        assertEquals(7e-6, pingPong.value(ResultColumns.AVERAGE), 1e-12);
        assertEquals(3, pingPong.repetition);
        String table = ResultSummary.format(rows);
        assertTrue(table, table.contains("Messaging PingPong") && table.contains("7.00 µs"));
        assertTrue(table, table.contains("100.0 MB/s"));
    }

    @Test
    public void plotFileIsAReadablePng() throws IOException {
        Path dir = temp.getRoot().toPath();
        List<ResultRow> rows = new ArrayList<>();
        for (int size = 64; size <= 65536; size *= 4) {
            rows.add(latencyRow("JDK blocking", 0, size, 6e-6 + size * 1e-10));
            rows.add(latencyRow("hadroNIO blocking", 0, size, 1.5e-6 + size * 1e-11));
            rows.add(throughputRow("JDK blocking", size, size * 1e5));
            rows.add(throughputRow("hadroNIO blocking", size, size * 3e5));
        }
        Path png = dir.resolve("plots/plot.png");
        ResultPlot.write(rows, png);
        assertTrue(Files.size(png) > 1000);
        BufferedImage image = ImageIO.read(png.toFile());
        assertNotNull("not a PNG", image);
        assertTrue(image.getWidth() >= 1000 && image.getHeight() >= 400);
    }

    @Test
    public void percentilesFollowObservatory() {
        Histogram recorded = LatencyStats.newHistogram();
        for (int i = 1000; i >= 1; i--) {
            recorded.recordValue(i * 1000L); // 1 ms .. 1 us
        }
        LatencyStats stats = new LatencyStats(recorded);
        assertEquals(1000, stats.count());
        // Three significant digits: each figure within 0.1 % of the exact one.
        assertClose(1e-6, stats.minSeconds());
        assertClose(1e-3, stats.maxSeconds());
        assertClose(500e-6, stats.percentileSeconds(0.5));
        assertClose(990e-6, stats.percentileSeconds(0.99));
        assertClose(1e-3, stats.percentileSeconds(0.9999));
        assertClose(500.5e-6, stats.averageSeconds());
    }

    @Test
    public void histogramsOfConnectionsMerge() {
        Histogram odd = LatencyStats.newHistogram();
        Histogram even = LatencyStats.newHistogram();
        Histogram one = LatencyStats.newHistogram();
        for (int i = 1; i <= 1000; i++) {
            (i % 2 == 0 ? even : odd).recordValue(i * 1000L);
            one.recordValue(i * 1000L);
        }
        Histogram all = LatencyStats.newHistogram();
        all.add(odd);
        all.add(even);
        LatencyStats merged = new LatencyStats(all);
        LatencyStats whole = new LatencyStats(one);
        assertEquals(whole.count(), merged.count());
        for (double rank : new double[] {0.5, 0.95, 0.99, 0.999, 1}) {
            assertEquals(whole.percentileSeconds(rank), merged.percentileSeconds(rank), 0);
        }
        assertClose(249e-6, new LatencyStats(odd).percentileSeconds(0.25));
    }

    @Test(expected = IllegalArgumentException.class)
    public void anEmptyHistogramHasNoStatistics() {
        new LatencyStats(LatencyStats.newHistogram());
    }

    private static void assertClose(double exact, double measured) {
        assertTrue(measured + " is not within 0.1 % of " + exact, Math.abs(measured - exact) <= exact * 0.001);
    }

    private static Map<String, Object> keys(List<String> names) {
        Map<String, Object> m = new LinkedHashMap<>();
        for (String n : names) {
            m.put(n, n);
        }
        return m;
    }

    private static ResultRow latencyRow(String label, int rep, int size, double average) {
        Map<String, Double> v = new LinkedHashMap<>();
        for (String c : ResultColumns.LATENCY) {
            v.put(c, average);
        }
        v.put(ResultColumns.OPERATION_THROUGHPUT, 1 / average);
        v.put(ResultColumns.SERVER_CPU, 1e-6);
        v.put(ResultColumns.CLIENT_CPU, 1e-6);
        return new ResultRow(OperationKind.MESSAGING_PING_PONG.fileName(OperationMode.UNIDIRECTIONAL), label, rep,
                size, v);
    }

    private static ResultRow throughputRow(String label, int size, double bytesPerSecond) {
        Map<String, Double> v = new LinkedHashMap<>();
        v.put(ResultColumns.DATA_THROUGHPUT, bytesPerSecond);
        v.put(ResultColumns.OPERATION_THROUGHPUT, bytesPerSecond / size);
        v.put(ResultColumns.SERVER_CPU, 1e-6);
        v.put(ResultColumns.CLIENT_CPU, Double.NaN);
        return new ResultRow(OperationKind.MESSAGING_THROUGHPUT.fileName(OperationMode.UNIDIRECTIONAL), label, 0,
                size, v);
    }
}
