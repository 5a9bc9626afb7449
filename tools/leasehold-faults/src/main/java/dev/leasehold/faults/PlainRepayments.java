package dev.leasehold.faults;

import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import javax.sql.DataSource;

/**
 * The canary of the storm across instances: a repayment endpoint with neither lock nor
 * idempotency, two or more of these JVMs on one PostgreSQL schema. {@code POST
 * /notes/{no}/repayments} with {@code Idempotency-Key} and the amount as the body reads the
 * note's balance, writes it back less the amount, and books the repayment (autocommit, each its
 * own statement): concurrent repayments of one note lose updates, and a repeated key is booked
 * again. Arguments: port, private database ({@link PrivateDatabase.Spec}); tables {@code
 * fault_plain_note} and {@code fault_plain_repayment}.
 */
public final class PlainRepayments {

    private final DataSource pool;

    private PlainRepayments(DataSource pool) {
        this.pool = pool;
    }

    public static void main(String[] args) throws Exception {
        int port = Integer.parseInt(args[0]);
        PrivateDatabase.Spec db = PrivateDatabase.Spec.decode(args[1]);
        ChildJvm.Io io = new ChildJvm.Io();
        ExecutorService threads = Executors.newFixedThreadPool(16);
        try (var pool = db.pool("plain", 16)) {
            PlainRepayments service = new PlainRepayments(pool);
            HttpServer server = HttpServer.create(new InetSocketAddress("127.0.0.1", port), 64);
            server.createContext("/", service::handle);
            server.setExecutor(threads);
            server.start();
            io.reply("READY " + port);
            while (io.command() != null) {
                // runs until the parent closes stdin or kills it
            }
            server.stop(0);
        } finally {
            threads.shutdownNow();
        }
    }

    private void handle(HttpExchange exchange) throws IOException {
        int status;
        String body;
        try {
            String[] path = exchange.getRequestURI().getPath().split("/");
            long amount =
                    Long.parseLong(new String(exchange.getRequestBody().readAllBytes(), StandardCharsets.UTF_8).trim());
            if (path.length == 4 && path[1].equals("notes") && path[3].equals("repayments")) {
                status = 200;
                body = repay(path[2], amount, exchange.getRequestHeaders().getFirst("Idempotency-Key"));
            } else {
                status = 404;
                body = "no such resource";
            }
        } catch (NumberFormatException e) {
            status = 400;
            body = "the amount must be a whole number";
        } catch (Exception e) {
            status = 500;
            body = String.valueOf(e);
        }
        byte[] bytes = body.getBytes(StandardCharsets.UTF_8);
        exchange.sendResponseHeaders(status, bytes.length);
        exchange.getResponseBody().write(bytes);
        exchange.close();
    }

    /** Read, work, write back; no lock, no idempotency. */
    private String repay(String note, long amount, String key) throws SQLException {
        try (Connection tx = pool.getConnection()) {
            long balance;
            try (PreparedStatement read = tx.prepareStatement("SELECT balance FROM fault_plain_note WHERE no = ?")) {
                read.setString(1, note);
                try (ResultSet row = read.executeQuery()) {
                    row.next();
                    balance = row.getLong(1);
                }
            }
            try (PreparedStatement write =
                    tx.prepareStatement("UPDATE fault_plain_note SET balance = ? WHERE no = ?")) {
                write.setLong(1, balance - amount);
                write.setString(2, note);
                write.executeUpdate();
            }
            return Bookings.book(tx, "fault_plain_repayment", key, note, amount);
        }
    }
}
