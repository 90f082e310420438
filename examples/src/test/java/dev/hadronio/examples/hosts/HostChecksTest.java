package dev.hadronio.examples.hosts;

import org.junit.Rule;
import org.junit.Test;
import org.junit.rules.TemporaryFolder;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.Collections;
import java.util.HashSet;
import java.util.List;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertFalse;
import static org.junit.Assert.assertTrue;
import static org.junit.Assert.fail;

public class HostChecksTest {

    @Rule
    public TemporaryFolder folder = new TemporaryFolder();

    private final ByteArrayOutputStream printed = new ByteArrayOutputStream();
    private final HostChecks runner = new HostChecks(null, new PrintStream(printed, true));

    private static List<Check> threeChecks() {
        return Arrays.asList(
                new Check("works", "a check that works", 10, () -> "42 round trips"),
                new Check("breaks", "a check that breaks", 10, () -> {
                    throw new IllegalStateException("the echo came back short");
                }),
                new Check("cannot", "a check that cannot run here", 10, () -> {
                    throw new Check.Skipped("no link command");
                }));
    }

    @Test
    public void aReportCountsPassedFailedAndSkippedChecksOnce() throws Exception {
        Path junit = folder.getRoot().toPath().resolve("TEST-hosts.xml");
        Report report = runner.run(threeChecks(), Collections.emptySet(), junit);
        assertFalse(report.passed());
        String table = report.table();
        assertTrue(table, table.endsWith("1 passed, 1 failed, 1 skipped" + System.lineSeparator()));
        assertTrue(table, table.contains("the echo came back short"));
        String xml = new String(Files.readAllBytes(junit), StandardCharsets.UTF_8);
        assertTrue(xml, xml.contains("tests=\"3\" skipped=\"1\" failures=\"1\""));
        assertTrue(xml, xml.contains("<skipped message=\"no link command\"/>"));
        assertTrue(xml, xml.contains("<failure message=\"the echo came back short\"/>"));
    }

    @Test
    public void onlyRunsTheChecksNamed() throws Exception {
        Report report = runner.run(threeChecks(), new HashSet<>(Arrays.asList("works")), null);
        assertTrue(report.passed());
        assertEquals(1, report.outcomes.size());
    }

    @Test
    public void aNameThatIsNoCheckIsRefusedWithTheNames() throws Exception {
        try {
            runner.run(threeChecks(), new HashSet<>(Arrays.asList("link cut")), null);
            fail("ran with an unknown check name");
        } catch (IllegalArgumentException e) {
            assertEquals("no check named link cut; the checks: works, breaks, cannot", e.getMessage());
        }
    }

    @Test
    public void longDetailsWidenNoOtherRow() {
        String table = new dev.hadronio.examples.report.TextTable("check", "result", "detail").textInLastColumn()
                .row("short", "ok", "x".repeat(300))
                .row("a longer name", "FAILED", "y")
                .toString();
        String[] lines = table.split(System.lineSeparator());
        assertEquals("check          result  detail", lines[0]);
        assertEquals("a longer name  FAILED  y", lines[3]);
    }

    @Test
    public void aRemoteWithoutPortTakesTheServersBasePort() throws Exception {
        assertEquals(HostsCli.DEFAULT_PORT, HostsCli.remoteAddress("127.0.0.1").getPort());
        assertEquals(7100, HostsCli.remoteAddress("127.0.0.1:7100").getPort());
    }
}
