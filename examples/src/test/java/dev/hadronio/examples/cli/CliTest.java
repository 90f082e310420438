package dev.hadronio.examples.cli;

import dev.hadronio.examples.Main;
import dev.hadronio.examples.transport.Flavour;
import org.junit.Test;
import picocli.CommandLine.ParameterException;

import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertFalse;
import static org.junit.Assert.assertNull;
import static org.junit.Assert.assertTrue;
import static org.junit.Assert.fail;

public class CliTest {

    @Test
    public void parsesAClientCommandWithEveryNumberOption() throws Exception {
        Options o = Cli.parse("netty", "benchmark", "latency", "-r", "127.0.0.1:4000", "-m", "1_000",
                "--length=256", "-t", "8", "-c", "3", "--threads", "2");
        assertEquals(Options.Command.NETTY_LATENCY, o.command());
        assertFalse(o.isServer());
        assertEquals(4000, o.remote().getPort());
        assertEquals(1000, o.messages());
        assertEquals(256, o.length());
        assertEquals(8, o.threshold());
        assertEquals(3, o.connections());
        assertEquals(2, o.threads());
    }

    @Test
    public void serverDefaultsToTheDocumentedAddress() throws Exception {
        Options o = Cli.parse("blocking", "counter", "-s");
        assertTrue(o.isServer());
        assertNull(o.remote());
        assertEquals("0.0.0.0", o.address().getHostString());
        assertEquals(Options.DEFAULT_PORT, o.address().getPort());
        assertEquals(Options.DEFAULT_MESSAGES, o.messages());
    }

    @Test
    public void benchAndCompareOptions() throws Exception {
        Options bench = Cli.parse("bench", "-s", "-f", "run.json", "--flavour", "selector", "--name", "x");
        assertEquals(Options.Command.BENCH, bench.command());
        assertEquals(Flavour.SELECTOR, bench.flavour());
        Options demo = Cli.parse("demo", "--flavours", "netty,blocking", "--perftest", "/opt/ucx_perftest");
        assertEquals(Options.Command.DEMO, demo.command());
        assertEquals(Arrays.asList(Flavour.NETTY, Flavour.BLOCKING), demo.flavours());
        assertEquals("/opt/ucx_perftest", demo.perftest().toString());
        Options scale = Cli.parse("bench", "scale", "--counts", "1,16", "--perftest", "/opt/ucx_perftest");
        assertEquals(Options.Command.BENCH_SCALE, scale.command());
        assertEquals(Arrays.asList(1, 16), scale.counts());
        assertEquals("/opt/ucx_perftest", scale.perftest().toString());
        assertNull(Cli.parse("bench", "scale").perftest());
        assertEquals(30, Cli.parse("bench", "scale").warmUpMax());
        assertEquals(2, Cli.parse("bench", "scale", "--warmup-max", "2").warmUpMax());
    }

    @Test
    public void rejectsBadCommandLines() {
        String[][] bad = {
            {},
            {"tcp", "counter", "-s"},
            {"blocking"},
            {"blocking", "count", "-s"},
            {"blocking", "benchmark", "-s"},
            {"blocking", "benchmark", "bandwidth", "-s"},
            {"blocking", "counter"},
            {"blocking", "counter", "-s", "-r", "localhost:1"},
            {"blocking", "counter", "-s", "-x"},
            {"blocking", "counter", "-s", "extra"},
            {"blocking", "counter", "-s", "-m"},
            {"blocking", "counter", "-s", "-m", "ten"},
            {"blocking", "counter", "-s", "-m", "0"},
            {"blocking", "counter", "-s", "-m", "1", "-m", "2"},
            {"blocking", "counter", "-s", "-l", "4"},
            {"blocking", "counter", "-s", "-t", "4"},
            {"blocking", "counter", "-s", "-a", "nocolon"},
            {"blocking", "counter", "-s", "-a", "localhost:70000"},
            {"blocking", "counter", "-s", "--server=yes"},
            {"netty", "hello", "-s", "-f", "x.json"},
            {"bench", "-s"},
            {"bench", "-s", "-f", "x.json", "--flavour", "epoll"},
            {"bench", "compare", "-f", "x.json", "-s"},
            {"demo", "--flavours", "blocking,blocking"},
        };
        for (String[] args : bad) {
            try {
                Cli.parse(args);
                fail("accepted " + Arrays.toString(args));
            } catch (ParameterException e) {
                assertFalse(Arrays.toString(args), e.getMessage().isEmpty());
            }
        }
    }

    @Test
    public void badOptionsPrintUsageAndExitNonZero() {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        ByteArrayOutputStream err = new ByteArrayOutputStream();
        int code = Main.run(new String[] {"blocking", "counter", "-s", "--bogus"}, new ByteArrayInputStream(new byte[0]),
                new PrintStream(out, true), new PrintStream(err, true));
        assertEquals(Main.EXIT_USAGE, code);
        String text = new String(err.toByteArray(), StandardCharsets.UTF_8);
        assertTrue(text, text.contains("Unknown option: '--bogus'"));
        assertTrue(text, text.contains("Usage: hadronio blocking counter"));
    }

    @Test
    public void helpIsNotAnError() {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        int code = Main.run(new String[] {"--help"}, new ByteArrayInputStream(new byte[0]), new PrintStream(out, true),
                new PrintStream(new ByteArrayOutputStream(), true));
        assertEquals(Main.EXIT_OK, code);
        assertTrue(new String(out.toByteArray(), StandardCharsets.UTF_8).contains("Usage:"));
    }
}
