package dev.hadronio.reliability;

import dev.hadronio.reliability.Reliability.Mode;
import java.util.ArrayList;
import java.util.List;
import org.junit.runner.RunWith;
import org.junit.runners.Parameterized;
import org.junit.runners.Parameterized.Parameter;
import org.junit.runners.Parameterized.Parameters;

/**
 * A test that runs once for every provider in every mode. What a row starts goes into
 * {@link #resources}; a subclass sets the row's time limit with {@code resources.withTimeout}.
 */
@RunWith(Parameterized.class)
public abstract class ProviderModeTest {
    @Parameters(name = "{0}-{1}")
    public static List<Object[]> parameters() {
        List<Object[]> rows = new ArrayList<>();
        for (Reliability.Provider provider : Reliability.Provider.values()) {
            for (Mode mode : Mode.values()) {
                rows.add(new Object[] {provider, mode});
            }
        }
        return rows;
    }

    @Parameter(0)
    public Reliability.Provider provider;
    @Parameter(1)
    public Mode mode;

    protected final Resources resources = new Resources();
}
