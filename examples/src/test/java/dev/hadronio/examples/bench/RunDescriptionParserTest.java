package dev.hadronio.examples.bench;

import org.junit.Test;

import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertTrue;
import static org.junit.Assert.fail;

public class RunDescriptionParserTest {

    /** Observatory's own shape, including its detector block and string parameter values. */
    private static final String OBSERVATORY_STYLE = "{\n"
            + "  \"resultName\": \"NIO\",\n"
            + "  \"parameters\": [ { \"key\": \"flavour\", \"value\": \"selector\" }, { \"key\": \"threads\", \"value\": 2 } ],\n"
            + "  \"detector\": { \"enabled\": false, \"deviceNumber\": 0, \"mode\": \"compat\" },\n"
            + "  \"operations\": [\n"
            + "    { \"name\": \"MessagingThroughput\", \"modes\": [ \"unidirectional\", \"bidirectional\" ],\n"
            + "      \"repetitions\": 3, \"iterations\": [ { \"size\": 1, \"count\": 100000000, \"warmUp\": 1000000 },\n"
            + "                                          { \"size\": 65536, \"count\": 6250000, \"warmUp\": 250000 } ] },\n"
            + "    { \"name\": \"MessagingPingPong\", \"modes\": [ \"unidirectional\" ], \"repetitions\": 1,\n"
            + "      \"iterations\": [ { \"size\": 64, \"count\": 1000, \"warmUp\": 0 } ] },\n"
            + "    { \"name\": \"BulkTransfer\", \"modes\": [ \"unidirectional\" ],\n"
            + "      \"iterations\": [ { \"size\": 8388608, \"count\": 512 } ] }\n"
            + "  ]\n"
            + "}\n";

    @Test
    public void parsesObservatoryShape() {
        RunDescription d = RunDescriptionParser.parse(OBSERVATORY_STYLE);
        assertEquals("NIO", d.resultName());
        assertEquals("selector", d.parameter("flavour", "blocking"));
        assertEquals(2, d.intParameter("threads", 1));
        assertEquals(7, d.intParameter("absent", 7));
        assertEquals(3, d.operations().size());
        RunDescription.Operation tp = d.operations().get(0);
        assertEquals(OperationKind.MESSAGING_THROUGHPUT, tp.kind);
        assertEquals(2, tp.modes.size());
        assertEquals(OperationMode.BIDIRECTIONAL, tp.modes.get(1));
        assertEquals(3, tp.repetitions);
        assertEquals(100000000, tp.iterations.get(0).count);
        assertEquals(1000000, tp.iterations.get(0).warmUp);
        RunDescription.Operation bulk = d.operations().get(2);
        assertEquals(1, bulk.repetitions);
        assertEquals(0, bulk.iterations.get(0).warmUp);
        assertEquals(8388608, d.maxSize());
        // plan order is Observatory's: operation, mode, iteration, repetition
        assertEquals(2 * 2 * 3 + 1 + 1, BenchRunner.plan(d).size());
    }

    @Test
    public void builtInDemoDescriptionIsValid() throws Exception {
        try (InputStream in = getClass().getResourceAsStream("/dev/hadronio/examples/demo.json")) {
            String json = new String(in.readAllBytes(), StandardCharsets.UTF_8);
            RunDescription d = RunDescriptionParser.parse(json);
            assertTrue(d.operations().size() >= 2);
        }
    }

    @Test
    public void shippedRunDescriptionsAreValid() throws Exception {
        Path runs = Paths.get("runs");
        int n = 0;
        try (DirectoryStream<Path> files = Files.newDirectoryStream(runs, "*.json")) {
            for (Path file : files) {
                RunDescriptionParser.parse(file);
                n++;
            }
        }
        assertTrue("no run descriptions in " + runs.toAbsolutePath(), n >= 4);
    }

    @Test
    public void errorsNameTheBadField() {
        expectError("{", "not valid JSON");
        expectError("[]", "the top level must be an object");
        expectError("{\"operations\": []}", "resultName is missing");
        expectError("{\"resultName\": \"x\"}", "'operations' is missing");
        expectError("{\"resultName\": \"x\", \"operations\": [], \"colour\": 1}", "unknown key 'colour'");
        expectError(op("\"name\": \"Foo\", \"modes\": [\"unidirectional\"], \"iterations\": [" + IT + "]"),
                "operations[0].name: unknown operation 'Foo'");
        expectError(op("\"name\": \"MessagingPingPong\", \"modes\": [\"bidirectional\"], \"iterations\": [" + IT + "]"),
                "operations[0].modes[0]: MessagingPingPong can only run unidirectional");
        expectError(op("\"name\": \"MessagingPingPong\", \"modes\": [\"sideways\"], \"iterations\": [" + IT + "]"),
                "unknown mode 'sideways'");
        expectError(op("\"name\": \"MessagingPingPong\", \"iterations\": [" + IT + "]"),
                "operations[0].modes is missing");
        expectError(op("\"name\": \"MessagingPingPong\", \"modes\": [\"unidirectional\"], \"iterations\": "
                + "[{\"size\": 0, \"count\": 1}]"), "operations[0].iterations[0].size must be >= 1");
        expectError(op("\"name\": \"MessagingPingPong\", \"modes\": [\"unidirectional\"], \"iterations\": "
                + "[{\"size\": 1.5, \"count\": 1}]"), "operations[0].iterations[0].size must be a whole number");
        expectError(op("\"name\": \"MessagingPingPong\", \"modes\": [\"unidirectional\"], \"iterations\": "
                + "[{\"size\": 1, \"count\": \"many\"}]"), "operations[0].iterations[0].count must be a number");
        expectError(op("\"name\": \"MessagingPingPong\", \"modes\": [\"unidirectional\"], \"repetitions\": 0, "
                + "\"iterations\": [" + IT + "]"), "operations[0].repetitions must be >= 1");
    }

    @Test
    public void badParameterValuesAreReported() {
        RunDescription d = RunDescriptionParser.parse("{\"resultName\": \"x\", \"parameters\": [{\"key\": \"threads\","
                + " \"value\": \"lots\"}], \"operations\": [{\"name\": \"MessagingPingPong\", \"modes\": "
                + "[\"unidirectional\"], \"iterations\": [" + IT + "]}]}");
        try {
            d.intParameter("threads", 1);
            fail("accepted threads=lots");
        } catch (IllegalArgumentException e) {
            assertTrue(e.getMessage(), e.getMessage().contains("parameter 'threads'"));
        }
    }

    private static final String IT = "{\"size\": 64, \"count\": 10}";

    private static String op(String body) {
        return "{\"resultName\": \"x\", \"operations\": [{" + body + "}]}";
    }

    private static void expectError(String json, String fragment) {
        try {
            RunDescriptionParser.parse(json);
            fail("accepted " + json);
        } catch (IllegalArgumentException e) {
            assertTrue("'" + e.getMessage() + "' should contain '" + fragment + "'", e.getMessage().contains(fragment));
        }
    }
}
