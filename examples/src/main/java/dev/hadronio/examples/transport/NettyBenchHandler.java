package dev.hadronio.examples.transport;

import io.netty.buffer.ByteBuf;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import org.HdrHistogram.Histogram;

import java.io.EOFException;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.util.ArrayDeque;

/**
 * The benchmark protocol as a netty handler. All state lives on the channel's event loop: operations are
 * started with a task on it and report through a {@link Completion}. Received buffers wait in a queue until an
 * operation consumes them, so bytes that arrive before their operation starts are never lost. Outgoing messages
 * are slices of one pooled direct buffer (recycled by netty, no allocation per message).
 */
final class NettyBenchHandler extends ChannelInboundHandlerAdapter {

    private enum ReceiveMode { IDLE, DISCARD, CAPTURE, PING, PONG }

    private ChannelHandlerContext ctx;
    private ByteBuf template;
    private final ArrayDeque<ByteBuf> pending = new ArrayDeque<>();
    private IOException closed;

    // sending (throughput)
    private Completion sendDone;
    private int sendRemaining;
    private int sendSize;
    private int flushThreshold;
    private int sinceFlush;
    private boolean inSendLoop;

    // receiving (throughput, control bytes, round trips)
    private ReceiveMode mode = ReceiveMode.IDLE;
    private Completion receiveDone;
    private long discardRemaining;
    private ByteBuffer captureTarget;
    private int messageSize;
    private int messagePart;
    private int roundsRemaining;
    private Histogram rtts;
    private long pingStart;

    @Override
    public void handlerAdded(ChannelHandlerContext context) {
        ctx = context;
        template = context.alloc().directBuffer(64 * 1024);
        template.writeZero(template.capacity());
    }

    @Override
    public void handlerRemoved(ChannelHandlerContext context) {
        template.release();
        releasePending();
    }

    Completion startSend(int count, int size, int threshold) {
        Completion done = new Completion();
        ctx.executor().execute(() -> {
            if (failIfClosed(done)) {
                return;
            }
            ensureTemplate(size);
            sendDone = done;
            sendRemaining = count;
            sendSize = size;
            flushThreshold = threshold;
            sinceFlush = 0;
            continueSending();
        });
        return done;
    }

    Completion startReceive(long bytes) {
        return startReceiving(ReceiveMode.DISCARD, bytes, null, 0, 0, null);
    }

    Completion startCapture(ByteBuffer target) {
        return startReceiving(ReceiveMode.CAPTURE, 0, target, 0, 0, null);
    }

    Completion startPing(int count, int size, Histogram rttNanos) {
        return startReceiving(ReceiveMode.PING, 0, null, count, size, rttNanos);
    }

    Completion startPong(int count, int size) {
        return startReceiving(ReceiveMode.PONG, 0, null, count, size, null);
    }

    private Completion startReceiving(ReceiveMode newMode, long bytes, ByteBuffer target, int rounds, int size,
                                      Histogram rttNanos) {
        Completion done = new Completion();
        ctx.executor().execute(() -> {
            if (failIfClosed(done)) {
                return;
            }
            if (mode != ReceiveMode.IDLE) {
                done.fail(new IOException("a receive operation (" + mode + ") is already running"));
                return;
            }
            if (rounds == 0 && (newMode == ReceiveMode.PING || newMode == ReceiveMode.PONG)
                    || newMode == ReceiveMode.DISCARD && bytes == 0
                    || newMode == ReceiveMode.CAPTURE && !target.hasRemaining()) {
                done.succeed();
                return;
            }
            ensureTemplate(size);
            mode = newMode;
            receiveDone = done;
            discardRemaining = bytes;
            captureTarget = target;
            roundsRemaining = rounds;
            messageSize = size;
            messagePart = 0;
            rtts = rttNanos;
            if (newMode == ReceiveMode.PING) {
                sendRoundTripMessage();
            }
            drain();
        });
        return done;
    }

    @Override
    public void channelRead(ChannelHandlerContext context, Object msg) {
        pending.addLast((ByteBuf) msg);
        drain();
    }

    @Override
    public void channelWritabilityChanged(ChannelHandlerContext context) {
        if (sendDone != null && context.channel().isWritable()) {
            continueSending();
        }
        context.fireChannelWritabilityChanged();
    }

    @Override
    public void channelInactive(ChannelHandlerContext context) {
        failAll(new EOFException("connection closed by the peer"));
        context.fireChannelInactive();
    }

    @Override
    public void exceptionCaught(ChannelHandlerContext context, Throwable cause) {
        failAll(cause instanceof IOException ? (IOException) cause : new IOException(cause));
        context.close();
    }

    /**
     * Writes until done or until the channel is not writable. A flush can fire channelWritabilityChanged
     * synchronously; that nested call returns at once and the loop here goes on.
     */
    private void continueSending() {
        if (inSendLoop) {
            return;
        }
        inSendLoop = true;
        try {
            while (sendRemaining > 0) {
                if (!ctx.channel().isWritable()) {
                    ctx.flush();
                    sinceFlush = 0;
                    if (!ctx.channel().isWritable()) {
                        return; // resumed by channelWritabilityChanged
                    }
                    continue;
                }
                ctx.write(template.retainedSlice(0, sendSize), ctx.voidPromise());
                sendRemaining--;
                if (++sinceFlush >= flushThreshold) {
                    ctx.flush();
                    sinceFlush = 0;
                }
            }
            if (sinceFlush > 0) {
                ctx.flush();
                sinceFlush = 0;
            }
            Completion done = sendDone;
            sendDone = null;
            done.succeed();
        } finally {
            inSendLoop = false;
        }
    }

    private void drain() {
        while (mode != ReceiveMode.IDLE && !pending.isEmpty()) {
            ByteBuf head = pending.peekFirst();
            consume(head);
            if (!head.isReadable()) {
                pending.pollFirst().release();
            }
        }
    }

    private void consume(ByteBuf buf) {
        switch (mode) {
            case DISCARD: {
                int n = (int) Math.min(buf.readableBytes(), discardRemaining);
                buf.skipBytes(n);
                discardRemaining -= n;
                if (discardRemaining == 0) {
                    finishReceive();
                }
                break;
            }
            case CAPTURE: {
                int n = Math.min(buf.readableBytes(), captureTarget.remaining());
                int limit = captureTarget.limit();
                captureTarget.limit(captureTarget.position() + n);
                buf.readBytes(captureTarget);
                captureTarget.limit(limit);
                if (!captureTarget.hasRemaining()) {
                    finishReceive();
                }
                break;
            }
            case PING:
            case PONG: {
                int n = Math.min(buf.readableBytes(), messageSize - messagePart);
                buf.skipBytes(n);
                messagePart += n;
                if (messagePart == messageSize) {
                    messagePart = 0;
                    completeRound();
                }
                break;
            }
            default:
                throw new IllegalStateException("consume in mode " + mode);
        }
    }

    private void completeRound() {
        if (mode == ReceiveMode.PING) {
            long now = System.nanoTime();
            if (rtts != null) {
                rtts.recordValue(now - pingStart);
            }
            if (--roundsRemaining > 0) {
                sendRoundTripMessage();
            } else {
                finishReceive();
            }
        } else {
            sendRoundTripMessage();
            if (--roundsRemaining == 0) {
                finishReceive();
            }
        }
    }

    private void sendRoundTripMessage() {
        pingStart = System.nanoTime();
        ctx.writeAndFlush(template.retainedSlice(0, messageSize), ctx.voidPromise());
    }

    private void finishReceive() {
        mode = ReceiveMode.IDLE;
        captureTarget = null;
        rtts = null;
        Completion done = receiveDone;
        receiveDone = null;
        done.succeed();
    }

    private void ensureTemplate(int size) {
        if (template.capacity() < size) {
            template.release();
            template = ctx.alloc().directBuffer(size);
            template.writeZero(size);
        }
    }

    private boolean failIfClosed(Completion done) {
        if (closed != null) {
            done.fail(closed);
            return true;
        }
        return false;
    }

    private void failAll(IOException cause) {
        if (closed == null) {
            closed = cause;
        }
        if (sendDone != null) {
            sendDone.fail(cause);
            sendDone = null;
        }
        if (receiveDone != null) {
            receiveDone.fail(cause);
            receiveDone = null;
            mode = ReceiveMode.IDLE;
        }
    }

    private void releasePending() {
        ByteBuf buf;
        while ((buf = pending.pollFirst()) != null) {
            buf.release();
        }
    }
}
