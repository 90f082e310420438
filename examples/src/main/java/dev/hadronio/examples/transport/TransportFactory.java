package dev.hadronio.examples.transport;

import java.io.Closeable;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.time.Duration;

/** Makes connections of one {@link Flavour}; owns shared resources such as netty's event loops. */
public interface TransportFactory extends Closeable {

    /** Connects, retrying while the server refuses, until {@code patience} has passed. */
    MessageTransport connect(InetSocketAddress remote, Duration patience) throws IOException;

    /** Binds and listens. */
    TransportListener listen(InetSocketAddress local) throws IOException;
}
