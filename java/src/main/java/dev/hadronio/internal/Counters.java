package dev.hadronio.internal;

import java.lang.System.Logger.Level;
import java.util.LinkedHashMap;
import java.util.Map;
import javax.management.Attribute;
import javax.management.AttributeList;
import javax.management.AttributeNotFoundException;
import javax.management.DynamicMBean;
import javax.management.MBeanAttributeInfo;
import javax.management.MBeanInfo;
import javax.management.ObjectName;

/**
 * hadroNIO's counters as the JMX MBean {@code dev.hadronio:type=Counters}, readable from jconsole,
 * {@code hadronio counters <pid>} or any JMX client: connections by path (upgrades to shared memory
 * and to the network, connections kept on TCP by reason), application bytes over UCX and over TCP,
 * writes that waited for credit, how waits went (busy-polls that caught their event or ran out,
 * sleeps in the kernel), and UCX workers and lanes created and gone. All are counts since the library loaded, read-only.
 */
public final class Counters implements DynamicMBean {
    /** The MBean's name. */
    public static final String OBJECT_NAME = "dev.hadronio:type=Counters";

    private final String[] names = Native.counterNames();
    private final String[] descriptions = Native.counterDescriptions();

    private Counters() {
    }

    /**
     * How often the {@code hadronio-start} thread looks whether the JVM has an MBean server to
     * register with. Starting the platform MBean server costs about 100 ms of CPU (its classes,
     * the compilers' work on them), more than all of hadroNIO's own start: it is left to whoever
     * uses JMX (the application, {@code -Dcom.sun.management.jmxremote}, or a tool that attaches
     * and starts the management agent, as jconsole and {@code hadronio counters} do), and the
     * counters join it within this interval.
     */
    static final long LOOK_MILLIS = 1000;

    /**
     * Registers the MBean with the platform MBean server once the JVM has one; whether it did (or
     * never will: a runtime without {@code java.management}). Cheap while there is none.
     */
    static boolean registerOnceServed() {
        try {
            if (javax.management.MBeanServerFactory.findMBeanServer(null).isEmpty()) {
                return false;
            }
            java.lang.management.ManagementFactory.getPlatformMBeanServer()
                    .registerMBean(new Counters(), new ObjectName(OBJECT_NAME));
        } catch (Exception | LinkageError e) {
            // A runtime without java.management, or a second class loader's copy of hadroNIO.
            Log.logger().log(Level.DEBUG, () -> "the JMX MBean " + OBJECT_NAME + " is not registered: " + e);
        }
        return true;
    }

    /** Every counter by name, in a fixed order. */
    public static Map<String, Long> read() {
        String[] names = Native.counterNames();
        long[] values = Native.counters();
        Map<String, Long> counters = new LinkedHashMap<>();
        for (int i = 0; i < names.length && i < values.length; i++) {
            counters.put(names[i], values[i]);
        }
        return counters;
    }

    @Override
    public Object getAttribute(String attribute) throws AttributeNotFoundException {
        long[] values = Native.counters();
        for (int i = 0; i < names.length; i++) {
            if (names[i].equals(attribute)) {
                return values[i];
            }
        }
        throw new AttributeNotFoundException("no hadroNIO counter " + attribute);
    }

    @Override
    public void setAttribute(Attribute attribute) throws AttributeNotFoundException {
        throw new AttributeNotFoundException("hadroNIO's counters are read-only: " + attribute.getName());
    }

    @Override
    public AttributeList getAttributes(String[] attributes) {
        long[] values = Native.counters();
        AttributeList list = new AttributeList();
        for (String attribute : attributes) {
            for (int i = 0; i < names.length; i++) {
                if (names[i].equals(attribute)) {
                    list.add(new Attribute(attribute, values[i]));
                }
            }
        }
        return list;
    }

    @Override
    public AttributeList setAttributes(AttributeList attributes) {
        return new AttributeList();
    }

    @Override
    public Object invoke(String actionName, Object[] params, String[] signature) {
        throw new UnsupportedOperationException("hadroNIO's counters have no operations");
    }

    @Override
    public MBeanInfo getMBeanInfo() {
        MBeanAttributeInfo[] attributes = new MBeanAttributeInfo[names.length];
        for (int i = 0; i < names.length; i++) {
            attributes[i] = new MBeanAttributeInfo(names[i], "long", descriptions[i], true, false, false);
        }
        return new MBeanInfo(Counters.class.getName(), "hadroNIO counters (counts since the library loaded)",
                attributes, null, null, null);
    }
}
