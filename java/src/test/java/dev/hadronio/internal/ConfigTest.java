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
