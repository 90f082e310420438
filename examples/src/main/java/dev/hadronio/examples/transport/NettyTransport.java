package dev.hadronio.examples.transport;

import io.netty.buffer.Unpooled;
import io.netty.channel.Channel;
import io.netty.channel.ChannelFuture;
import org.HdrHistogram.Histogram;

import java.io.IOException;
import java.nio.ByteBuffer;

/** One netty channel; the calling thread hands each operation to the event loop and waits for its end. */
final class NettyTransport implements MessageTransport {

    private final Channel channel;
    private final NettyBenchHandler handler;

    NettyTransport(Channel channel, NettyBenchHandler handler) {
        this.channel = channel;
        this.handler = handler;
    }

    @Override
    public void sendMessages(int count, int size, int flushThreshold) throws IOException {
        handler.startSend(count, size, flushThreshold).await("sending " + count + " messages");
    }

    @Override
    public void receiveMessages(int count, int size) throws IOException {
        handler.startReceive((long) count * size).await("receiving " + count + " messages");
    }

    @Override
    public void ping(int count, int size, Histogram rttNanos) throws IOException {
        handler.startPing(count, size, rttNanos).await(count + " round trips");
    }

    @Override
    public void pong(int count, int size) throws IOException {
        handler.startPong(count, size).await("answering " + count + " round trips");
    }

    @Override
    public void writeBytes(ByteBuffer src) throws IOException {
        ChannelFuture future = channel.writeAndFlush(Unpooled.copiedBuffer(src));
        future.awaitUninterruptibly();
        if (!future.isSuccess()) {
            throw new IOException("write failed: " + future.cause(), future.cause());
        }
    }

    @Override
    public void readBytes(ByteBuffer dst) throws IOException {
        handler.startCapture(dst).await("reading " + dst.remaining() + " bytes");
    }

    @Override
    public void close() {
        channel.close().awaitUninterruptibly();
    }

    @Override
    public String toString() {
        return "NettyTransport[" + channel + "]";
    }
}
