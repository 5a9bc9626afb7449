package dev.leasehold.jdbc;

import java.io.DataInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.util.concurrent.atomic.AtomicLong;

/**
 * A loopback relay in front of PostgreSQL that counts, from the messages the server receives, the
 * round trips clients make: every Sync (extended protocol) and every simple Query is answered by
 * one ReadyForQuery. PostgreSQL keeps no per-session statement counter without an extension, so
 * the count is taken at the server's door.
 */
final class PostgresRoundTripCounter implements AutoCloseable {

    private static final int SSL_REQUEST = 80877103;
    private static final int GSS_REQUEST = 80877104;

    private final ServerSocket listener;
    private final String serverHost;
    private final int serverPort;
    private final AtomicLong roundTrips = new AtomicLong();

    PostgresRoundTripCounter(String serverHost, int serverPort) throws IOException {
        this.serverHost = serverHost;
        this.serverPort = serverPort;
        this.listener = new ServerSocket(0, 8, InetAddress.getLoopbackAddress());
        Thread accepting = new Thread(this::accept, "pg-round-trip-counter");
        accepting.setDaemon(true);
        accepting.start();
    }

    /** The JDBC URL {@code url} rewritten to pass through this relay. */
    String relayUrl(String url) {
        return url.replaceFirst("//[^/]+/", "//127.0.0.1:" + listener.getLocalPort() + "/");
    }

    long roundTrips() {
        return roundTrips.get();
    }

    private void accept() {
        while (!listener.isClosed()) {
            try {
                Socket client = listener.accept();
                Socket server = new Socket(serverHost, serverPort);
                client.setTcpNoDelay(true);
                server.setTcpNoDelay(true);
                pipe(server.getInputStream(), client.getOutputStream(), client, server);
                Thread counting = new Thread(() -> count(client, server), "pg-round-trip-counter-client");
                counting.setDaemon(true);
                counting.start();
            } catch (IOException e) {
                return;
            }
        }
    }

    /** Relays the client's messages to the server, counting Sync ('S') and Query ('Q'). */
    private void count(Socket client, Socket server) {
        try (client;
                server) {
            DataInputStream in = new DataInputStream(client.getInputStream());
            OutputStream out = server.getOutputStream();
            // Untyped start: SSL/GSS requests (answered by one byte) until the startup message.
            while (true) {
                int length = in.readInt();
                byte[] body = in.readNBytes(length - 4);
                writeInt(out, length);
                out.write(body);
                out.flush();
                int code = ((body[0] & 0xff) << 24)
                        | ((body[1] & 0xff) << 16)
                        | ((body[2] & 0xff) << 8)
                        | (body[3] & 0xff);
                if (code != SSL_REQUEST && code != GSS_REQUEST) {
                    break;
                }
            }
            while (true) {
                int type = in.read();
                if (type < 0) {
                    return;
                }
                int length = in.readInt();
                byte[] body = in.readNBytes(length - 4);
                if (type == 'S' || type == 'Q') {
                    roundTrips.incrementAndGet();
                }
                out.write(type);
                writeInt(out, length);
                out.write(body);
                out.flush();
            }
        } catch (IOException e) {
            // the connection ended
        }
    }

    private static void pipe(InputStream from, OutputStream to, Socket a, Socket b) {
        Thread relay = new Thread(
                () -> {
                    try {
                        from.transferTo(to);
                    } catch (IOException e) {
                        // the connection ended
                    } finally {
                        try {
                            a.close();
                            b.close();
                        } catch (IOException ignored) {
                            // closing anyway
                        }
                    }
                },
                "pg-round-trip-counter-server");
        relay.setDaemon(true);
        relay.start();
    }

    private static void writeInt(OutputStream out, int value) throws IOException {
        out.write(value >>> 24);
        out.write(value >>> 16);
        out.write(value >>> 8);
        out.write(value);
    }

    @Override
    public void close() throws IOException {
        listener.close();
    }
}
