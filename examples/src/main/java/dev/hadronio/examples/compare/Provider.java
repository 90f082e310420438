package dev.hadronio.examples.compare;

import dev.hadronio.examples.Main;

import java.util.Map;

/** The two providers a comparison runs, each in its own child JVMs. */
enum Provider {
    /** The JDK's own provider: the child gets {@code DISABLE_HADRONIO=true}. */
    JDK("JDK"),
    /** hadroNIO: the child gets the provider property (and the parent's environment). */
    HADRONIO("hadroNIO");

    static final String HADRONIO_CLASS = "dev.hadronio.HadronioProvider";

    private final String label;

    Provider(String label) {
        this.label = label;
    }

    String label() {
        return label;
    }

    /** The JVM option that selects this provider, or null. */
    String jvmOption() {
        return this == HADRONIO ? "-D" + Main.PROVIDER_PROPERTY + "=" + HADRONIO_CLASS : null;
    }

    void configure(Map<String, String> environment) {
        if (this == JDK) {
            environment.put(Main.DISABLE_VARIABLE, "true");
        }
    }
}
