package dev.hadronio.provider;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertTrue;

import com.sun.tools.attach.VirtualMachine;
import dev.hadronio.reliability.ChildJvm;
import dev.hadronio.reliability.Reliability;
import java.util.Map;
import java.util.TreeMap;
import javax.management.MBeanAttributeInfo;
import javax.management.MBeanServerConnection;
import javax.management.ObjectName;
import javax.management.remote.JMXConnector;
import javax.management.remote.JMXConnectorFactory;
import javax.management.remote.JMXServiceURL;
import org.junit.Test;

/**
 * hadroNIO's counters read the way an operator would: from another JVM, over JMX (the attach API
 * starts the child's local management agent), after the child echoed 8 MiB over one connection.
 */
public class CountersTest {
    private static final int BYTES = 8 * 1024 * 1024;

    @Test
    public void anotherJvmReadsTheCountersOverJmx() throws Exception {
        try (ChildJvm child = new ChildJvm.Builder("counters", CountersProbe.class)
                .provider(Reliability.Provider.HADRONIO).args(BYTES).start()) {
            child.await(line -> line.equals("READY") || line.startsWith("FAILED"), 60);
            assertTrue(child.output(), child.find(line -> line.equals("READY")) != null);
            assertTrue(child.output(), child.value("PATH").startsWith("ucx over shared memory"));
            VirtualMachine vm = VirtualMachine.attach(child.value("PID"));
            Map<String, Long> counters = new TreeMap<>();
            try (JMXConnector connector = JMXConnectorFactory.connect(new JMXServiceURL(vm.startLocalManagementAgent()))) {
                MBeanServerConnection server = connector.getMBeanServerConnection();
                ObjectName name = new ObjectName("dev.hadronio:type=Counters");
                long deadline = System.nanoTime() + 10_000_000_000L;
                while (!server.isRegistered(name) && System.nanoTime() < deadline) {
                    Thread.sleep(50);
                }
                for (MBeanAttributeInfo attribute : server.getMBeanInfo(name).getAttributes()) {
                    counters.put(attribute.getName(), (Long) server.getAttribute(name, attribute.getName()));
                }
            } finally {
                vm.detach();
            }
            String all = counters.toString();
            assertEquals(all, 2L, (long) counters.get("Connections"));
            assertEquals(all, 2L, (long) counters.get("UpgradesSharedMemory"));
            assertEquals(all, 0L, (long) counters.get("UpgradesNetwork"));
            assertEquals(all, 0L, counters.get("TcpPlainPeer") + counters.get("TcpByRule") + counters.get("TcpNoPath")
                    + counters.get("TcpOther"));
            // Both ends' bytes: the client's and the echo's, over TCP until the upgrade, then over UCX.
            long total = BYTES + Long.parseLong(child.value("WARMUP"));
            long ucx = counters.get("BytesSentUcx");
            long tcp = counters.get("BytesSentTcp");
            assertEquals(all, 2L * total, ucx + tcp);
            assertEquals(all, 2L * total, counters.get("BytesReceivedUcx") + counters.get("BytesReceivedTcp"));
            assertTrue(all, ucx > BYTES);
            assertTrue(all, counters.get("Sleeps") + counters.get("SpinsCaught") > 0);
            // Two blocking channels, a worker each (the listener's hub needs none).
            assertTrue(all, counters.get("WorkersCreated") >= 2 && counters.get("LanesOpened") >= 2);
            assertTrue(all, counters.get("WorkersCreated") >= counters.get("WorkersDestroyed"));
            child.send("exit");
            assertEquals(child.output(), 0, child.awaitExit(30));
        }
    }
}
