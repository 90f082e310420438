package dev.hadronio.examples.compare;

import org.junit.Test;

import java.io.IOException;
import java.nio.file.Paths;
import java.util.Arrays;
import java.util.Map;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.fail;

public class PerftestTest {

    @Test
    public void parsesTheCsvOutputOfDashFDashV() throws IOException {
        Map<String, Double> f = Perftest.parse(Arrays.asList(
                "+----------+",
                "iterations,50.0_percentile_lat,avg_lat,overall_lat,avg_bw,overall_bw,avg_mr,overall_mr",
                "20000,3.723,10.166,10.166,6147.82,6147.82,98365,98365"), Paths.get("x.log"));
        assertEquals(10.166, f.get("overall_lat"), 1e-9);
        assertEquals(6147.82, f.get("overall_bw"), 1e-9);
        assertEquals(3.723, f.get("50.0_percentile_lat"), 1e-9);
    }

    @Test
    public void skipsLogLinesBetweenTheHeaderAndTheFigures() throws IOException {
        Map<String, Double> f = Perftest.parse(Arrays.asList(
                "iterations,50.0_percentile_lat,avg_lat,overall_lat,avg_bw,overall_bw,avg_mr,overall_mr",
                "[1796447132.216404] [testbed-b:150  :0]       ib_device.c:576  UCX  WARN  rxe0: could not read device/vendor id",
                "2000,312.000,715.646,597.895,0.09,0.10,1397,1673"), Paths.get("x.log"));
        assertEquals(312.0, f.get("50.0_percentile_lat"), 1e-9);
        assertEquals(1673, f.get("overall_mr"), 1e-9);
    }

    @Test
    public void reportsMissingFigures() {
        try {
            Perftest.parse(Arrays.asList("UCX ERROR client failed. connect() failed: Connection refused"),
                    Paths.get("x.log"));
            fail("parsed an error message");
        } catch (IOException e) {
            assertEquals("cannot find ucx_perftest's figures in its output; see x.log", e.getMessage());
        }
    }
}
