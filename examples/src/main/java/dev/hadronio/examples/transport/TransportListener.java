package dev.hadronio.examples.transport;

import java.io.Closeable;
import java.io.IOException;
import java.net.InetSocketAddress;

/** A listening endpoint that hands out accepted connections one at a time. */
public interface TransportListener extends Closeable {

    /** Blocks until the next connection is accepted. */
    MessageTransport accept() throws IOException;

    /** The bound address (with the real port if 0 was asked for). */
    InetSocketAddress localAddress() throws IOException;
}
