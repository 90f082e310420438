package dev.hadronio.examples.figures;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

/**
 * What the figure commands share: starting a child JVM on one provider or the other, and what a
 * child measures about itself and reports to its parent.
 */
final class Children {
    /** A child's standard output line that carries a figure: {@code FIGURE name value}. */
    static final String PREFIX = "FIGURE ";

    private Children() {
    }

    /**
     * Starts {@code main} in a JVM of its own with {@code jvmOptions}, on hadroNIO (this JVM's
     * {@code hadronio.*} properties passed on) or on the JDK's provider; its standard error goes to
     * ours.
     */
    static Process start(boolean hadronio, List<String> jvmOptions, Class<?> main, String... args) throws IOException {
        List<String> command = new ArrayList<>();
        command.add(Paths.get(System.getProperty("java.home"), "bin", "java").toString());
        command.addAll(jvmOptions);
        if (hadronio) {
            command.add("-Djava.nio.channels.spi.SelectorProvider=dev.hadronio.HadronioProvider");
            for (String name : System.getProperties().stringPropertyNames()) {
                if (name.startsWith("hadronio.")) {
                    command.add("-D" + name + "=" + System.getProperty(name));
                }
            }
        }
        command.add("-cp");
        command.add(System.getProperty("java.class.path"));
        command.add(main.getName());
        command.addAll(Arrays.asList(args));
        ProcessBuilder builder = new ProcessBuilder(command).redirectError(ProcessBuilder.Redirect.INHERIT);
        builder.environment().remove("DISABLE_HADRONIO");
        return builder.start();
    }

    /** A child's standard output, line by line. */
    static BufferedReader reader(Process process) {
        return new BufferedReader(new InputStreamReader(process.getInputStream(), StandardCharsets.UTF_8));
    }

    /** In a child: reports a figure to the parent. */
    static void figure(String name, double value) {
        System.out.println(PREFIX + name + " " + value);
        System.out.flush();
    }

    /** Lets the collector and the native side settle before a measurement of memory. */
    static void settle() throws InterruptedException {
        for (int i = 0; i < 3; i++) {
            System.gc();
            Thread.sleep(300);
        }
    }
}
