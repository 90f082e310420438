package dev.hadronio.examples.simple;

import dev.hadronio.examples.cli.Options.Command;

import java.io.IOException;
import java.nio.ByteBuffer;

/**
 * The first bytes a client sends on each connection of the simple commands, so that a server started with only
 * {@code -s} learns what to do: command, connection count and index, messages, length, flush threshold.
 */
public final class Setup {

    public static final int BYTES = 7 * Integer.BYTES;
    private static final int MAGIC = 0x48444e31; // "HDN1"

    public final Command command;
    public final int connections;
    public final int index;
    public final int messages;
    public final int length;
    public final int threshold;

    public Setup(Command command, int connections, int index, int messages, int length, int threshold) {
        this.command = command;
        this.connections = connections;
        this.index = index;
        this.messages = messages;
        this.length = length;
        this.threshold = threshold;
    }

    /** Encodes into a fresh buffer ready to be written. */
    public ByteBuffer encode() {
        ByteBuffer b = ByteBuffer.allocate(BYTES);
        b.putInt(MAGIC).putInt(command.ordinal()).putInt(connections).putInt(index)
                .putInt(messages).putInt(length).putInt(threshold).flip();
        return b;
    }

    /** Decodes and checks a received header against the command this server runs. */
    public static Setup decode(ByteBuffer b, Command expected) throws IOException {
        b.flip();
        int magic = b.getInt();
        if (magic != MAGIC) {
            throw new IOException(String.format("the client is not a hadronio example (bad magic 0x%08x)", magic));
        }
        int ordinal = b.getInt();
        Command[] commands = Command.values();
        if (ordinal < 0 || ordinal >= commands.length) {
            throw new IOException("the client sent an unknown command number " + ordinal);
        }
        Command command = commands[ordinal];
        if (command != expected) {
            throw new IOException("the client runs '" + command.words() + "' but this server runs '"
                    + expected.words() + "'");
        }
        Setup s = new Setup(command, b.getInt(), b.getInt(), b.getInt(), b.getInt(), b.getInt());
        if (s.connections < 1 || s.index < 0 || s.index >= s.connections || s.messages < 1 || s.length < 1
                || s.threshold < 1) {
            throw new IOException("the client sent a bad setup: " + s);
        }
        return s;
    }

    /** True if {@code other} describes the same run (only the index may differ). */
    public boolean sameRun(Setup other) {
        return command == other.command && connections == other.connections && messages == other.messages
                && length == other.length && threshold == other.threshold;
    }

    @Override
    public String toString() {
        return "'" + command.words() + "' connection " + index + " of " + connections + ", " + messages
                + " messages of " + length + " bytes, flush every " + threshold;
    }
}
