package dev.hadronio.examples.ops;

import com.sun.tools.attach.VirtualMachine;
import java.io.PrintStream;
import java.lang.reflect.InvocationTargetException;
import java.util.Locale;
import javax.management.MBeanAttributeInfo;
import javax.management.MBeanServerConnection;
import javax.management.ObjectName;
import javax.management.remote.JMXConnector;
import javax.management.remote.JMXConnectorFactory;
import javax.management.remote.JMXServiceURL;

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

    public static boolean handles(String[] args) {
        return args.length >= 1 && (args[0].equals("doctor") || args[0].equals("counters"));
    }

    /** Runs {@code doctor} or {@code counters <pid>}; returns the exit status. */
    public static int run(String[] args, PrintStream out, PrintStream err) {
        try {
            if (args[0].equals("doctor")) {
                Object status = Class.forName("dev.hadronio.Doctor").getMethod("run", PrintStream.class).invoke(null, out);
                return (Integer) status;
            }
            if (args.length != 2 || !args[1].matches("\\d+")) {
                err.println("usage: hadronio counters <pid of a JVM running hadroNIO>");
                return 2;
            }
            return counters(args[1], out, err);
        } catch (InvocationTargetException e) {
            err.println("hadronio: " + args[0] + " failed: " + e.getCause());
            return 1;
        } catch (ReflectiveOperationException e) {
            err.println("hadronio: the hadroNIO jar is not on the class path: " + e);
            return 1;
        }
    }

    private static int counters(String pid, PrintStream out, PrintStream err) {
        VirtualMachine vm;
        try {
            vm = VirtualMachine.attach(pid);
        } catch (Exception e) {
            err.println("hadronio: cannot attach to JVM " + pid + " (it must run as this user): " + e.getMessage());
            return 1;
        }
        try (JMXConnector connector = JMXConnectorFactory.connect(new JMXServiceURL(vm.startLocalManagementAgent()))) {
            MBeanServerConnection server = connector.getMBeanServerConnection();
            ObjectName name = new ObjectName(COUNTERS);
            if (!server.isRegistered(name)) {
                err.println("hadronio: JVM " + pid + " has no " + COUNTERS + " (is hadroNIO its selector provider, and active?)");
                return 1;
            }
            out.printf(Locale.ROOT, "hadroNIO counters of JVM %s%n", pid);
            out.printf(Locale.ROOT, "%-22s %16s  %s%n", "counter", "value", "meaning");
            for (MBeanAttributeInfo attribute : server.getMBeanInfo(name).getAttributes()) {
                Object value = server.getAttribute(name, attribute.getName());
                out.printf(Locale.ROOT, "%-22s %,16d  %s%n", attribute.getName(), (Long) value, attribute.getDescription());
            }
            return 0;
        } catch (Exception e) {
            err.println("hadronio: reading the counters of JVM " + pid + " failed: " + e);
            return 1;
        } finally {
            try {
                vm.detach();
            } catch (java.io.IOException ignored) {
                // the JVM is gone
            }
        }
    }
}
