package dev.hadronio.examples.ops;

import com.sun.tools.attach.VirtualMachine;
import java.io.PrintStream;
import java.lang.reflect.InvocationTargetException;
import java.util.Locale;
import java.util.concurrent.Callable;
import javax.management.MBeanAttributeInfo;
import javax.management.MBeanServerConnection;
import javax.management.ObjectName;
import javax.management.remote.JMXConnector;
import javax.management.remote.JMXConnectorFactory;
import javax.management.remote.JMXServiceURL;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Parameters;

/**
 * {@code hadronio doctor}: the provider jar's own check of this machine ({@code dev.hadronio.Doctor},
 * the same as {@code java -jar hadronio-<version>.jar}). {@code hadronio counters <pid>}: the
 * hadroNIO counters of a running JVM, read over JMX (the attach API starts its local management
 * agent), as a table.
 */
public final class OpsCli {
    private static final String COUNTERS = "dev.hadronio:type=Counters";

    private OpsCli() {
    }

    /** Adds {@code doctor} and {@code counters} to the {@code hadronio} command. */
    public static void addTo(CommandLine top, PrintStream out) {
        top.addSubcommand("doctor", new Doctor(out));
        top.addSubcommand("counters", new Counters(out));
    }

    @Command(name = "doctor", mixinStandardHelpOptions = true,
            description = "Checks this machine for hadroNIO (the same as java -jar hadronio-<version>.jar); "
                    + "exits with 1 and names the fix when something is wrong.")
    static final class Doctor implements Callable<Integer> {
        private final PrintStream out;

        Doctor(PrintStream out) {
            this.out = out;
        }

        @Override
        public Integer call() throws Exception {
            Class<?> doctor;
            try {
                doctor = Class.forName("dev.hadronio.Doctor");
            } catch (ClassNotFoundException e) {
                throw new Exception("the hadroNIO jar is not on the class path", e);
            }
            try {
                return (Integer) doctor.getMethod("run", PrintStream.class).invoke(null, out);
            } catch (InvocationTargetException e) {
                throw new IllegalStateException(e.getCause().toString(), e.getCause());
            }
        }
    }

    @Command(name = "counters", mixinStandardHelpOptions = true,
            description = "hadroNIO's counters of a running JVM, read over JMX, as a table.")
    static final class Counters implements Callable<Integer> {
        private final PrintStream out;

        @Parameters(paramLabel = "pid", description = "the process id of a JVM running hadroNIO (as this user)")
        long pid;

        Counters(PrintStream out) {
            this.out = out;
        }

        @Override
        public Integer call() throws Exception {
            counters(Long.toString(pid), out);
            return 0;
        }
    }

    private static void counters(String pid, PrintStream out) throws Exception {
        VirtualMachine vm;
        try {
            vm = VirtualMachine.attach(pid);
        } catch (Exception e) {
            throw new Exception("cannot attach to JVM " + pid + " (it must run as this user): " + e.getMessage(), e);
        }
        try (JMXConnector connector = JMXConnectorFactory.connect(new JMXServiceURL(vm.startLocalManagementAgent()))) {
            MBeanServerConnection server = connector.getMBeanServerConnection();
            ObjectName name = new ObjectName(COUNTERS);
            // hadroNIO joins an MBean server within a second of its start (the agent just started one).
            long deadline = System.nanoTime() + 3_000_000_000L;
            while (!server.isRegistered(name) && System.nanoTime() < deadline) {
                Thread.sleep(100);
            }
            if (!server.isRegistered(name)) {
                throw new Exception("JVM " + pid + " has no " + COUNTERS
                        + " (is hadroNIO its selector provider, and active?)");
            }
            out.printf(Locale.ROOT, "hadroNIO counters of JVM %s%n", pid);
            out.printf(Locale.ROOT, "%-22s %16s  %s%n", "counter", "value", "meaning");
            for (MBeanAttributeInfo attribute : server.getMBeanInfo(name).getAttributes()) {
                Object value = server.getAttribute(name, attribute.getName());
                out.printf(Locale.ROOT, "%-22s %,16d  %s%n", attribute.getName(), (Long) value, attribute.getDescription());
            }
        } finally {
            try {
                vm.detach();
            } catch (java.io.IOException ignored) {
                // the JVM is gone
            }
        }
    }
}
