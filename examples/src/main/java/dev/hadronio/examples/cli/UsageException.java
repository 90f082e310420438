package dev.hadronio.examples.cli;

/**
 * A command line that cannot be run: unknown mode or command, a bad option or a bad value. The message says
 * what was wrong; {@link #isHelpRequest()} marks an explicit {@code --help}, which is not an error.
 */
public final class UsageException extends Exception {

    private final boolean helpRequest;

    public UsageException(String message) {
        this(message, false);
    }

    private UsageException(String message, boolean helpRequest) {
        super(message);
        this.helpRequest = helpRequest;
    }

    static UsageException help() {
        return new UsageException("help requested", true);
    }

    public boolean isHelpRequest() {
        return helpRequest;
    }
}
