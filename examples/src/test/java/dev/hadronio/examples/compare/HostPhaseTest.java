package dev.hadronio.examples.compare;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertTrue;
import static org.junit.Assume.assumeTrue;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import org.junit.Test;

public class HostPhaseTest {

    @Test
    public void formatsBeforeAndAfter() {
        assertEquals("0.310 / 0.077 us", HostPhase.format(0.31, 0.0771));
        assertEquals("- / 0.077 us", HostPhase.format(Double.NaN, 0.077));
        assertEquals("-", HostPhase.format(Double.NaN, Double.NaN));
    }

    @Test
    public void aMissingPerftestIsSaidOnceAndMeasuresNothing() throws Exception {
        ByteArrayOutputStream text = new ByteArrayOutputStream();
        Path logs = Files.createTempDirectory("host-phase");
        HostPhase probe = HostPhase.find(logs.resolve("no-such-ucx_perftest"), logs, new PrintStream(text, true, "UTF-8"));
        assertTrue(Double.isNaN(probe.measure()));
        assertTrue(Double.isNaN(probe.measure()));
        String said = text.toString(StandardCharsets.UTF_8.name());
        assertTrue(said, said.contains("ucx_perftest failed") && said.contains("no-such-ucx_perftest"));
        assertEquals(said, said.indexOf("ucx_perftest failed"), said.lastIndexOf("ucx_perftest failed"));
    }

    /** With the ucx_perftest that cargo built next to the bundled UCX: a real one-way latency. */
    @Test
    public void measuresTheHostWithTheBundledPerftest() throws Exception {
        Path perftest = Perftest.bundledUnder(Paths.get(".."));
        if (perftest == null) {
            perftest = Perftest.bundled();
        }
        assumeTrue("no ucx_perftest built under target/release/build", perftest != null);
        Path logs = Files.createTempDirectory("host-phase");
        ByteArrayOutputStream text = new ByteArrayOutputStream();
        double micros = HostPhase.find(perftest, logs, new PrintStream(text, true, "UTF-8")).measure();
        // Shared memory between two processes: well under a millisecond one way, even on a slow host.
        assertTrue("one-way latency " + micros + " us; " + text, micros > 0 && micros < 1000);
    }
}
