package dev.hadronio.internal;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertTrue;
import static org.junit.Assert.fail;

import org.junit.After;
import org.junit.Test;

/** Bad settings are refused with an error naming the property, the value and what is allowed. */
public class ConfigTest {
    private static final String PROPERTY = "hadronio.test.setting";

    @After
    public void clear() {
        System.clearProperty(PROPERTY);
    }

    @Test
    public void unknownSettingsAreNamedWithTheClosestKnownOne() {
        java.util.Properties properties = new java.util.Properties();
        properties.setProperty("hadronio.slot", "4");
        properties.setProperty("hadronio.livenesMillis", "100");
        properties.setProperty("hadronio.slots", "16");
        properties.setProperty("hadronio.reliability.kills", "5");
        properties.setProperty("java.version", "17");
        java.util.List<String> warnings = Config.unknownProperties(properties);
        assertEquals(warnings.toString(), 2, warnings.size());
        assertTrue(warnings.get(0), warnings.get(0).startsWith("unknown hadroNIO setting hadronio.livenesMillis=100 is ignored; did you mean hadronio.livenessMillis?"));
        assertTrue(warnings.get(1), warnings.get(1).startsWith("unknown hadroNIO setting hadronio.slot=4 is ignored; did you mean hadronio.slots?"));
        assertEquals(0, Config.distance("abc", "abc"));
        assertEquals(1, Config.distance("slot", "slots"));
        assertEquals(3, Config.distance("", "abc"));
    }

    @Test
    public void defaultsApplyWhenUnset() {
        assertEquals(8, Config.integer(PROPERTY, 8, 2, 4096));
        assertEquals("ucx", Config.choice(PROPERTY, "ucx", "ucx", "tcp"));
    }

    @Test
    public void valuesInRangeAreTaken() {
        System.setProperty(PROPERTY, " 64 ");
        assertEquals(64, Config.integer(PROPERTY, 8, 2, 4096));
        System.setProperty(PROPERTY, "TCP");
        assertEquals("tcp", Config.choice(PROPERTY, "ucx", "ucx", "tcp"));
    }

    @Test
    public void outOfRangeAndMalformedValuesAreRefused() {
        for (String bad : new String[] {"1", "5000", "eight", "-3"}) {
            System.setProperty(PROPERTY, bad);
            try {
                Config.integer(PROPERTY, 8, 2, 4096);
                fail("accepted " + bad);
            } catch (IllegalArgumentException e) {
                assertTrue(e.getMessage(), e.getMessage().contains(PROPERTY + "='" + bad + "'"));
                assertTrue(e.getMessage(), e.getMessage().contains("2..4096"));
            }
        }
        System.setProperty(PROPERTY, "infiniband");
        try {
            Config.choice(PROPERTY, "ucx", "ucx", "tcp");
            fail("accepted infiniband");
        } catch (IllegalArgumentException e) {
            assertTrue(e.getMessage(), e.getMessage().contains("one of ucx, tcp"));
        }
    }
}
