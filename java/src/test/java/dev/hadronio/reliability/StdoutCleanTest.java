package dev.hadronio.reliability;

import static org.junit.Assert.assertTrue;

import java.io.File;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.util.ArrayList;
import java.util.List;
import org.junit.Rule;
import org.junit.Test;
import org.junit.rules.TemporaryFolder;
import org.junit.rules.TestRule;
import org.junit.runner.RunWith;
import org.junit.runners.Parameterized;
import org.junit.runners.Parameterized.Parameter;
import org.junit.runners.Parameterized.Parameters;

/**
 * Nothing but the application's own lines on its standard output. Two hadroNIO JVMs stream over
 * UCX until the writer is killed; the reader's stdout must hold only what it printed itself, while
 * hadroNIO's log lines and UCX's (here a warning UCX always gives: an unknown {@code UCX_}
 * variable in the environment) go to standard error. Rows: UCX's default transports and
 * {@code UCX_TLS=tcp}.
 */
@RunWith(Parameterized.class)
public class StdoutCleanTest {
    @Parameters(name = "{0}")
    public static List<Object[]> parameters() {
        List<Object[]> rows = new ArrayList<>();
        rows.add(new Object[] {"default"});
        rows.add(new Object[] {"tcp"});
        return rows;
    }

    @Parameter(0)
    public String transports;

    private final Resources resources = new Resources();

    @Rule
    public final TestRule rules = resources.withTimeout(120);

    @Rule
    public final TemporaryFolder folder = new TemporaryFolder();

    @Test
    public void ucxAndHadronioLogOnlyToStderr() throws Exception {
        File stderr = folder.newFile("reader.stderr");
        ChildJvm.Builder reader = new ChildJvm.Builder("reader", StreamPeer.class)
                .args("listen", "127.0.0.1", 0, "read")
                .env("HADRONIO_LOG", "info")
                .env("UCX_HADRONIO_UNUSED_VARIABLE", "1")
                .stderrTo(stderr);
        ChildJvm.Builder writer = new ChildJvm.Builder("writer", StreamPeer.class);
        if (transports.equals("tcp")) {
            reader.env("UCX_TLS", "tcp");
            writer.env("UCX_TLS", "tcp");
        }
        ChildJvm readerJvm = resources.add(reader.start());
        String port = readerJvm.awaitValue("PORT", 30);
        ChildJvm writerJvm = resources.add(writer.args("connect", "127.0.0.1", port, "write").start());
        readerJvm.awaitValue("CONNECTED", 30);
        long deadline = System.nanoTime() + 30_000_000_000L;
        while (!read(stderr).contains("upgraded to UCX") && System.nanoTime() < deadline) {
            Thread.sleep(20);
        }
        assertTrue("the connection was upgraded (reader's stderr):\n" + read(stderr),
                read(stderr).contains("upgraded to UCX"));
        Thread.sleep(500);
        writerJvm.process().destroyForcibly();
        readerJvm.awaitExit(30);

        String log = read(stderr);
        assertTrue("UCX's warning is on standard error, through hadroNIO's logger:\n" + log,
                log.contains("hadronio::ucx") && log.contains("UCX_HADRONIO_UNUSED_VARIABLE"));
        List<String> foreign = new ArrayList<>();
        for (ChildJvm.Line line : readerJvm.lines()) {
            if (!line.text.matches("(PORT|CONNECTED|ERROR|EOF) .*")) {
                foreign.add(line.text);
            }
        }
        Reliability.figure(getClass().getSimpleName() + "[" + transports + "]", "foreign lines on stdout",
                foreign.size(), "");
        assertTrue("standard output holds only the application's lines; also there:\n" + String.join("\n", foreign),
                foreign.isEmpty());
    }

    private static String read(File file) throws Exception {
        return new String(Files.readAllBytes(file.toPath()), StandardCharsets.UTF_8);
    }
}
