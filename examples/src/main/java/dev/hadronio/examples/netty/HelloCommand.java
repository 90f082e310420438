package dev.hadronio.examples.netty;

import dev.hadronio.examples.cli.Options;
import io.netty.channel.Channel;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.SimpleChannelInboundHandler;
import io.netty.channel.nio.NioEventLoopGroup;

import java.io.IOException;
import java.io.PrintStream;
import java.nio.channels.spi.SelectorProvider;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;

/**
 * {@code netty hello}: the client sends one line and exits once the server answered; the server answers each
 * client once, closes that connection, and exits after {@code -c} clients.
 */
public final class HelloCommand {

    static final String GREETING = "Hello from the client";

    private final Options options;
    private final PrintStream out;

    public HelloCommand(Options options, PrintStream out) {
        this.options = options;
        this.out = out;
    }

    public void run() throws IOException {
        if (options.isServer()) {
            String provider = SelectorProvider.provider().getClass().getName();
            new LineServer(options.address(), options.threads(), options.connections(),
                    line -> "Hello from the server (" + provider + "), you said: " + line, true, out).run();
        } else {
            for (int i = 0; i < options.connections(); i++) {
                sayHello();
            }
        }
    }

    private void sayHello() throws IOException {
        EventLoopGroup group = new NioEventLoopGroup(options.threads());
        try {
            AtomicReference<String> answer = new AtomicReference<>();
            Channel channel = Lines.connect(group, options.remote(), () -> new AnswerHandler(answer, out));
            out.println("Connected to " + channel.remoteAddress() + ", sending: " + GREETING);
            channel.writeAndFlush(GREETING + "\n");
            channel.closeFuture().awaitUninterruptibly();
            if (answer.get() == null) {
                throw new IOException("the server closed the connection without answering");
            }
            out.println("Server answered: " + answer.get());
        } finally {
            group.shutdownGracefully(0, 2, TimeUnit.SECONDS).awaitUninterruptibly();
        }
    }

    /** Keeps the server's answer and closes the connection. */
    private static final class AnswerHandler extends SimpleChannelInboundHandler<String> {

        private final AtomicReference<String> answer;
        private final PrintStream out;

        AnswerHandler(AtomicReference<String> answer, PrintStream out) {
            this.answer = answer;
            this.out = out;
        }

        @Override
        protected void channelRead0(ChannelHandlerContext ctx, String line) {
            answer.set(line);
            ctx.close();
        }

        @Override
        public void exceptionCaught(ChannelHandlerContext ctx, Throwable cause) {
            out.println("Connection failed: " + cause);
            ctx.close();
        }
    }
}
