package dev.hadronio.conformance;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertTrue;
import static org.junit.Assert.fail;

import java.io.BufferedReader;
import java.io.File;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.channels.spi.SelectorProvider;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.After;
import org.junit.Test;
import org.junit.runner.RunWith;
import org.junit.runners.Parameterized;
import org.junit.runners.Parameterized.Parameters;

/**
 * {@link EchoProgram}'s server and client as two separate JVMs that choose their provider only by
 * {@code -Djava.nio.channels.spi.SelectorProvider=dev.hadronio.HadronioProvider} (the {@code hadronio}
 * parameter) or not at all ({@code jdk}), as an unmodified application would be run. Both must exit 0,
 * the three checksums must match, and each child must report the expected provider. System properties
 * {@code hadronio.*} of this JVM (other than {@code hadronio.conformance.*}) are passed on to the children;
 * the environment is inherited.
 */
@RunWith(Parameterized.class)
public class TwoJvmEchoTest extends AbstractConformanceTest {

    static final long BYTES = 8L * 1024 * 1024 + 13;
    static final long PROCESS_SECONDS = 40;

    @Parameters(name = "{0}")
    public static List<Object[]> parameters() {
        return Providers.parameters();
    }

    private final List<Child> children = new ArrayList<>();

    @After
    public void destroyChildren() {
        for (Child child : children) {
            child.process.destroyForcibly();
        }
    }

    @Test
    public void echoBetweenTwoJvms() throws Exception {
        String expectedProvider = target.isHadronio() ? Providers.HADRONIO_PROVIDER_CLASS
                : SelectorProvider.provider().getClass().getName();

        Child server = start("server", EchoProgram.class.getName(), "server", "0");
        String port = server.awaitValue("PORT");
        Child client = start("client", EchoProgram.class.getName(), "client", "127.0.0.1", port,
                Long.toString(BYTES));

        client.awaitExit();
        server.awaitExit();

        for (Child child : new Child[] {server, client}) {
            assertEquals(child.name + " provider\n" + child.output(), expectedProvider, child.value("PROVIDER"));
            assertEquals(child.name + " channel provider\n" + child.output(), expectedProvider,
                    child.value("CHANNEL_PROVIDER"));
        }
        String sent = client.value("SENT");
        assertEquals("client sent", BYTES, Long.parseLong(sent.split(" ")[0]));
        assertEquals("client received what it sent\n" + client.output(), sent, client.value("RECEIVED"));
        assertEquals("server echoed what the client sent\n" + server.output(), sent, server.value("ECHOED"));
    }

    private Child start(String name, String... arguments) throws IOException {
        List<String> command = new ArrayList<>();
        command.add(System.getProperty("java.home") + File.separator + "bin" + File.separator + "java");
        command.add("-cp");
        command.add(System.getProperty("java.class.path"));
        if (target.isHadronio()) {
            command.add("-Djava.nio.channels.spi.SelectorProvider=" + Providers.HADRONIO_PROVIDER_CLASS);
        }
        for (Map.Entry<Object, Object> property : System.getProperties().entrySet()) {
            String key = property.getKey().toString();
            if (key.startsWith("hadronio.") && !key.startsWith("hadronio.conformance.")) {
                command.add("-D" + key + "=" + property.getValue());
            }
        }
        for (String argument : arguments) {
            command.add(argument);
        }
        Process process = new ProcessBuilder(command).redirectErrorStream(true).start();
        Child child = new Child(name, process);
        children.add(child);
        return child;
    }

    /** A child JVM whose merged stdout and stderr is collected line by line by a helper thread. */
    private final class Child {
        final String name;
        final Process process;
        final List<String> lines = new ArrayList<>();
        final Background<Void> collector;

        Child(String name, Process process) {
            this.name = name;
            this.process = process;
            this.collector = background(name + "-output", () -> {
                try (BufferedReader reader = new BufferedReader(
                        new InputStreamReader(process.getInputStream(), StandardCharsets.UTF_8))) {
                    for (String line = reader.readLine(); line != null; line = reader.readLine()) {
                        synchronized (lines) {
                            lines.add(line);
                        }
                    }
                }
                return null;
            });
        }

        String output() {
            synchronized (lines) {
                return "--- output of the " + name + " JVM ---\n" + String.join("\n", lines);
            }
        }

        /** The rest of the first line starting with {@code key + " "}, or null. */
        String find(String key) {
            synchronized (lines) {
                for (String line : lines) {
                    if (line.startsWith(key + " ")) {
                        return line.substring(key.length() + 1).trim();
                    }
                }
            }
            return null;
        }

        String value(String key) {
            String value = find(key);
            if (value == null) {
                fail("the " + name + " JVM printed no " + key + " line\n" + output());
            }
            return value;
        }

        /** Waits until the child printed {@code key}, failing early if it exits without. */
        String awaitValue(String key) throws InterruptedException {
            await(name + " JVM to print " + key, () -> find(key) != null || !process.isAlive());
            if (find(key) == null) {
                collector.join();
                fail("the " + name + " JVM exited with " + process.exitValue() + " before printing " + key
                        + "\n" + output());
            }
            return find(key);
        }

        void awaitExit() throws InterruptedException {
            if (!process.waitFor(PROCESS_SECONDS, TimeUnit.SECONDS)) {
                process.destroyForcibly();
                fail("the " + name + " JVM did not exit within " + PROCESS_SECONDS + " s\n" + output());
            }
            collector.join();
            assertTrue("the " + name + " JVM exited with " + process.exitValue() + "\n" + output(),
                    process.exitValue() == 0);
        }
    }
}
