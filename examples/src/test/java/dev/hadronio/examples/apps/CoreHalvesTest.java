package dev.hadronio.examples.apps;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertThrows;
import static org.junit.Assert.assertTrue;

import dev.hadronio.examples.util.OwnProcess;
import java.util.List;
import org.junit.Test;

public class CoreHalvesTest {

    @Test
    public void listsAsTheKernelWritesThemAreSplitInTwoHalves() {
        CoreHalves two = CoreHalves.of("0-1");
        assertEquals("0", two.server);
        assertEquals("1", two.client);
        CoreHalves gaps = CoreHalves.of("0,2,4-7");
        assertEquals("0,2,4", gaps.server);
        assertEquals("5,6,7", gaps.client);
        CoreHalves odd = CoreHalves.of("3-5\n");
        assertEquals("3", odd.server);
        assertEquals("4,5", odd.client);
        assertEquals(List.of(8), CoreHalves.parse("8"));
    }

    @Test
    public void oneCpuOrAMalformedListIsRejectedByName() {
        assertTrue(assertThrows(IllegalArgumentException.class, () -> CoreHalves.of("0")).getMessage()
                .contains("--apart needs at least 2 CPUs, this process may use 1 (0)"));
        for (String bad : new String[] {"", "a", "1-", "3-1", "0-1-2", "-1", "0,,1"}) {
            String message = assertThrows(IllegalArgumentException.class, () -> CoreHalves.of(bad)).getMessage();
            assertTrue(message, message.startsWith("not a CPU list: \"" + bad + "\""));
        }
    }

    @Test
    public void thisProcessesCpusAreSplitWhole() throws Exception {
        List<Integer> cpus = CoreHalves.parse(OwnProcess.status("Cpus_allowed_list"));
        if (cpus.size() >= 2) {
            CoreHalves halves = CoreHalves.ofThisProcess();
            assertEquals(cpus, CoreHalves.parse(halves.server + "," + halves.client));
        } else {
            assertThrows(IllegalArgumentException.class, CoreHalves::ofThisProcess);
        }
    }

    @Test
    public void aPinnedCommandRunsUnderTaskset() {
        assertEquals(List.of("taskset", "-c", "0,1", "java", "-version"), CoreHalves.pinned("0,1", List.of("java", "-version")));
    }
}
