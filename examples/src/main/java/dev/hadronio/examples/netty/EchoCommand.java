package dev.hadronio.examples.netty;

import dev.hadronio.examples.cli.Options;
import io.netty.channel.Channel;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.SimpleChannelInboundHandler;
import io.netty.channel.nio.NioEventLoopGroup;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.io.InterruptedIOException;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;

/**
 * {@code netty echo}: the server sends every line back; the client sends each line of its input, prints the
 * answer and closes at end of input. The server exits after {@code -c} clients.
 */
public final class EchoCommand {

    private static final String CLOSED = "\u0000closed";

    private final Options options;
    private final InputStream in;
    private final PrintStream out;

    public EchoCommand(Options options, InputStream in, PrintStream out) {
        this.options = options;
        this.in = in;
        this.out = out;
    }

    public void run() throws IOException {
        if (options.isServer()) {
            new LineServer(options.address(), options.threads(), options.connections(), line -> line, false, out)
                    .run();
            return;
        }
        EventLoopGroup group = new NioEventLoopGroup(options.threads());
        try {
            BlockingQueue<String> answers = new LinkedBlockingQueue<>();
            Channel channel = Lines.connect(group, options.remote(), () -> new QueueHandler(answers, out));
            out.println("Connected to " + channel.remoteAddress() + "; type lines, end with Ctrl-D");
            BufferedReader reader = new BufferedReader(new InputStreamReader(in, StandardCharsets.UTF_8));
            String line;
            int lines = 0;
            while ((line = reader.readLine()) != null) {
                channel.writeAndFlush(line + "\n");
                String answer = answers.take();
                if (CLOSED.equals(answer)) {
                    throw new IOException("the server closed the connection");
                }
                out.println("echo: " + answer);
                lines++;
            }
            channel.close().awaitUninterruptibly();
            out.println("Sent " + lines + " line(s), all echoed");
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new InterruptedIOException("interrupted while waiting for the echo");
        } finally {
            group.shutdownGracefully(0, 2, TimeUnit.SECONDS).awaitUninterruptibly();
        }
    }

    /** Queues each answer (and a marker when the connection closes) for the reading thread. */
    private static final class QueueHandler extends SimpleChannelInboundHandler<String> {

        private final BlockingQueue<String> answers;
        private final PrintStream out;

        QueueHandler(BlockingQueue<String> answers, PrintStream out) {
            this.answers = answers;
            this.out = out;
        }

        @Override
        protected void channelRead0(ChannelHandlerContext ctx, String line) {
            answers.add(line);
        }

        @Override
        public void channelInactive(ChannelHandlerContext ctx) {
            answers.add(CLOSED);
        }

        @Override
        public void exceptionCaught(ChannelHandlerContext ctx, Throwable cause) {
            out.println("Connection failed: " + cause);
            ctx.close();
        }
    }
}
