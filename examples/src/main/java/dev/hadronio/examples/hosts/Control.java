package dev.hadronio.examples.hosts;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.PrintWriter;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.charset.StandardCharsets;

/** The checks' end of a server's control connection (see {@link HostServer}): a command, an answer. */
final class Control implements AutoCloseable {
    private final Socket socket;
    private final BufferedReader in;
    private final PrintWriter out;

    private Control(Socket socket) throws IOException {
        this.socket = socket;
        socket.setSoTimeout(60_000);
        in = new BufferedReader(new InputStreamReader(socket.getInputStream(), StandardCharsets.UTF_8));
        out = new PrintWriter(socket.getOutputStream(), true, StandardCharsets.UTF_8);
    }

    /** Connects, retrying for up to {@code waitMillis} while the server is not up yet. */
    static Control connect(InetSocketAddress address, long waitMillis) throws IOException, InterruptedException {
        long deadline = System.nanoTime() + waitMillis * 1_000_000;
        while (true) {
            Socket socket = new Socket();
            try {
                socket.connect(address, 5_000);
                return new Control(socket);
            } catch (IOException e) {
                socket.close();
                if (System.nanoTime() > deadline) {
                    throw new IOException("no hadronio hosts server at " + address + " within " + waitMillis / 1000 + " s: " + e.getMessage(), e);
                }
                Thread.sleep(500);
            }
        }
    }

    /** Sends one command and returns the answer line. */
    synchronized String ask(String command) throws IOException {
        out.println(command);
        String answer = in.readLine();
        if (answer == null) {
            throw new IOException("the server's control connection ended (command " + command + ")");
        }
        return answer;
    }

    /** Tells the server to exit, waiting at most 5 s for its answer (its host may be gone). */
    void quit() {
        try {
            socket.setSoTimeout(5_000);
            ask("quit");
        } catch (IOException e) {
            // powered off, or gone
        }
    }

    @Override
    public void close() throws IOException {
        socket.close();
    }
}
