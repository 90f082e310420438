package dev.hadronio.examples.apps;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertNotEquals;
import static org.junit.Assert.assertTrue;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.charset.StandardCharsets;
import org.junit.Test;
import picocli.CommandLine;

public class AppsCliTest {

    private static String rejected(String... arguments) {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        CommandLine bench = new CommandLine(CommandLine.Model.CommandSpec.create());
        AppsCli.addTo(bench, new PrintStream(out, true, StandardCharsets.UTF_8));
        StringWriter errors = new StringWriter();
        bench.setErr(new PrintWriter(errors));
        String[] line = new String[arguments.length + 1];
        line[0] = "apps";
        System.arraycopy(arguments, 0, line, 1, arguments.length);
        assertNotEquals("exit status of bench apps with " + String.join(" ", arguments), 0, bench.execute(line));
        assertEquals("nothing ran", "", out.toString(StandardCharsets.UTF_8));
        return errors.toString();
    }

    @Test
    public void roundsOutsideTheirRangeAreRejectedByName() {
        assertTrue(rejected("--rounds", "0").contains("--rounds must be 1..99, not 0"));
        assertTrue(rejected("--rounds", "100").contains("--rounds must be 1..99, not 100"));
        assertTrue(rejected("--rounds", "two").contains("--rounds"));
    }

    @Test
    public void aLongestWarmUpShorterThanTheLeastIsRejectedByName() {
        assertTrue(rejected("--warmup", "5", "--warmup-max", "3").contains("--warmup-max (3.0) must be at least --warmup (5.0)"));
        assertTrue(rejected("--warmup", "-1").contains("--warmup >= 0"));
    }

    @Test
    public void anUnknownAppIsRejectedByName() {
        assertTrue(rejected("--apps", "tomcat").contains("tomcat"));
    }
}
