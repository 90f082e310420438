package dev.hadronio.examples.hosts;

/** One check across hosts: its name (a test case in the report), what it shows, its time limit and its body. */
final class Check {
    /** A check's body: returns a line for the table (figures it measured), throws when it fails. */
    interface Body {
        String run() throws Exception;
    }

    /** Thrown by a check that cannot run here (what it needs is missing); it is reported as skipped. */
    static final class Skipped extends Exception {
        private static final long serialVersionUID = 1L;

        Skipped(String why) {
            super(why);
        }
    }

    final String name;
    final String title;
    final long limitSeconds;
    final Body body;

    Check(String name, String title, long limitSeconds, Body body) {
        this.name = name;
        this.title = title;
        this.limitSeconds = limitSeconds;
        this.body = body;
    }
}
