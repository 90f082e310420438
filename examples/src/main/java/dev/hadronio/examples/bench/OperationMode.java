package dev.hadronio.examples.bench;

/** Observatory's operation modes. */
public enum OperationMode {
    UNIDIRECTIONAL("unidirectional"),
    BIDIRECTIONAL("bidirectional");

    private final String jsonName;

    OperationMode(String jsonName) {
        this.jsonName = jsonName;
    }

    public String jsonName() {
        return jsonName;
    }

    static OperationMode fromJson(String name) {
        for (OperationMode m : values()) {
            if (m.jsonName.equals(name)) {
                return m;
            }
        }
        return null;
    }
}
