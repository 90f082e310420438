package dev.hadronio.internal;

import java.lang.System.Logger;
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

    private static final Logger LOG = System.getLogger("dev.hadronio");

    private static final Map<String, String> DESCRIPTIONS = new LinkedHashMap<>();

    static {
        DESCRIPTIONS.put("Connections", "connections set up (connected or accepted)");
        DESCRIPTIONS.put("UpgradesSharedMemory", "connections whose data moved to UCX over shared memory");
        DESCRIPTIONS.put("UpgradesNetwork", "connections whose data moved to UCX over the network");
        DESCRIPTIONS.put("TcpPlainPeer", "connections kept on TCP: the peer does not speak hadroNIO");
        DESCRIPTIONS.put("TcpByRule", "connections kept on TCP by hadronio.rules or hadronio.transport=tcp");
        DESCRIPTIONS.put("TcpNoPath", "connections kept on TCP: UCX does not reach the peer, or only more slowly than TCP");
        DESCRIPTIONS.put("TcpOther", "connections kept on TCP for another reason (the log names it)");
        DESCRIPTIONS.put("BytesSentUcx", "application bytes sent over UCX");
        DESCRIPTIONS.put("BytesReceivedUcx", "application bytes received over UCX");
        DESCRIPTIONS.put("BytesSentTcp", "application bytes sent over TCP");
        DESCRIPTIONS.put("BytesReceivedTcp", "application bytes received over TCP");
        DESCRIPTIONS.put("CreditStalls", "writes that found no credit left (the peer had not consumed enough)");
        DESCRIPTIONS.put("SpinsCaught", "busy-polls that caught the event they waited for");
        DESCRIPTIONS.put("SpinsMissed", "busy-polls that ran out of time or gave way, then slept");
        DESCRIPTIONS.put("Sleeps", "waits that slept in the kernel");
        DESCRIPTIONS.put("WorkersCreated", "UCX workers created (a selector's, a blocking channel's, the virtual threads')");
        DESCRIPTIONS.put("WorkersDestroyed", "UCX workers destroyed (created minus destroyed: how many there are)");
        DESCRIPTIONS.put("LanesOpened", "lanes opened: a hub's use of a worker, new or kept as a spare");
        DESCRIPTIONS.put("LanesClosed", "lanes closed (their worker destroyed or kept as a spare)");
    }

    private final String[] names = Native.counterNames();

    private Counters() {
    }

    /**
     * Registers the MBean with the platform MBean server, on a thread of its own (starting the
     * server takes tens of milliseconds that the application's first connection should not wait).
     */
    static void registerInBackground() {
        Thread thread = new Thread(() -> {
            try {
                java.lang.management.ManagementFactory.getPlatformMBeanServer()
                        .registerMBean(new Counters(), new ObjectName(OBJECT_NAME));
            } catch (Exception | LinkageError e) {
                // A runtime without java.management, or a second class loader's copy of hadroNIO.
                LOG.log(Level.DEBUG, () -> "the JMX MBean " + OBJECT_NAME + " is not registered: " + e);
            }
        }, "hadronio-jmx");
        thread.setDaemon(true);
        thread.start();
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
            attributes[i] = new MBeanAttributeInfo(names[i], "long", DESCRIPTIONS.getOrDefault(names[i], names[i]),
                    true, false, false);
        }
        return new MBeanInfo(Counters.class.getName(), "hadroNIO counters (counts since the library loaded)",
                attributes, null, null, null);
    }
}
