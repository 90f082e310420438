package dev.hadronio.examples.hosts;

import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;

/** The other host the checks talk to: its servers (see {@link HostServer}) and their control connections. */
final class Target {
    final InetAddress host;
    final int base;
    /** The base port of a server on the JDK's provider there, or -1. */
    final int jdkBase;
    final Control control;
    final Control jdkControl;
    /** Whether the server may be asked to power its host off (the last check). */
    final boolean mayPowerOff;
    /** A command that cuts ({@code down}) and restores ({@code up}) the link between the hosts, or null. */
    final String linkCommand;
    /** Whether the checks may change this host's network (an interface down, a packet filter). */
    final boolean faults;

    Target(InetAddress host, int base, int jdkBase, Control control, Control jdkControl, boolean mayPowerOff, String linkCommand,
           boolean faults) {
        this.host = host;
        this.base = base;
        this.jdkBase = jdkBase;
        this.control = control;
        this.jdkControl = jdkControl;
        this.mayPowerOff = mayPowerOff;
        this.linkCommand = linkCommand;
        this.faults = faults;
    }

    InetSocketAddress at(int offset) {
        return new InetSocketAddress(host, base + offset);
    }

    InetSocketAddress jdkAt(int offset) {
        return new InetSocketAddress(host, jdkBase + offset);
    }

    /** The path of the server's side of the connection from our local port {@code port}. */
    String serverPath(int port) throws IOException {
        return control.ask("path " + port);
    }

    /** A number from the server's answer to {@code command}: the word after {@code name}. */
    long serverFigure(String command, String name) throws IOException {
        String[] words = control.ask(command).split("[ =]");
        for (int i = 0; i + 1 < words.length; i++) {
            if (words[i].equals(name)) {
                return Long.parseLong(words[i + 1]);
            }
        }
        throw new IOException("the server's answer to '" + command + "' has no " + name);
    }
}
