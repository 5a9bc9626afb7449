package dev.leasehold.faults;

import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;
import dev.leasehold.Lease;
import dev.leasehold.LeaseOptions;
import dev.leasehold.LockBusyException;
import dev.leasehold.LockKey;
import dev.leasehold.LockService;
import dev.leasehold.idempotency.IdempotentExecutor;
import dev.leasehold.idempotency.SideEffects;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Duration;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import javax.sql.DataSource;

/**
 * A minimal loan service for the storm across instances: repayments of loan notes over HTTP, two
 * or more of these JVMs on one PostgreSQL schema and one Redis key prefix. It stands in for the
 * reference loan service, with the same protections: the request is idempotent (request records,
 * Idempotency-Key header), the note is locked (a Redis lease, waiting up to 3 s), and the debit
 * is a side effect fenced by the lease and committed with its mark. Arguments: port, Redis URI,
 * key prefix, private database ({@link PrivateDatabase.Spec}).
 *
 * <ul>
 *   <li>{@code POST /notes/{no}/repayments} with {@code Idempotency-Key} and the amount as the body:
 *       200 and the receipt (the same receipt for every repeat of the key), 409 when the note or
 *       the request is busy, 422 when the key was used with another payload
 *   <li>{@code POST /plain/notes/{no}/repayments}: the canary, no lock and no idempotency: read the
 *       balance, work, write it back
 * </ul>
 */
public final class LoanStandIn {

    private static final LeaseOptions NOTE_LOCK = LeaseOptions.builder()
            .leaseFor(Duration.ofSeconds(10))
            .waitFor(Duration.ofSeconds(3))
            .build();

    private final DataSource pool;
    private final LockService locks;
    private final IdempotentExecutor executor;
    private final SideEffects effects;

    private LoanStandIn(DataSource pool, LockService locks, IdempotentExecutor executor, SideEffects effects) {
        this.pool = pool;
        this.locks = locks;
        this.executor = executor;
        this.effects = effects;
    }

    public static void main(String[] args) throws Exception {
        int port = Integer.parseInt(args[0]);
        PrivateDatabase.Spec db = PrivateDatabase.Spec.decode(args[3]);
        ChildJvm.Io io = new ChildJvm.Io();
        ExecutorService threads = Executors.newFixedThreadPool(16);
        try (var pool = db.pool("loan", 16);
                Library.Store store = Library.redisStore(Library.redisUri(args[1], Duration.ofSeconds(2)), args[2]);
                LockService locks = Library.locks(store.store());
                IdempotentExecutor executor =
                        Library.executor(Library.records(pool, db.database(), Duration.ofSeconds(30)), locks)) {
            LoanStandIn service = new LoanStandIn(
                    pool, locks, executor, Library.sideEffects(pool, db.database(), Duration.ofSeconds(30)));
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
                String key = exchange.getRequestHeaders().getFirst("Idempotency-Key");
                if (key == null) {
                    status = 400;
                    body = "Idempotency-Key header is missing";
                } else {
                    String[] answer = repay(path[2], amount, key);
                    status = Integer.parseInt(answer[0]);
                    body = answer[1];
                }
            } else if (path.length == 5 && path[1].equals("plain") && path[4].equals("repayments")) {
                status = 200;
                body = repayPlain(path[3], amount, exchange.getRequestHeaders().getFirst("Idempotency-Key"));
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

    private String[] repay(String note, long amount, String key) throws Exception {
        String payload = "{\"amount\":" + amount + ",\"note\":\"" + note + "\"}";
        Library.RequestOutcome outcome;
        try {
            outcome = Library.request(executor, "repay:" + note, key, payload, context -> {
                try (Lease lease = locks.acquire(LockKey.of("borrow", note), NOTE_LOCK)) {
                    Library.BusinessWrite debit = (tx, c) -> {
                        if (!Library.acceptFence(pool, tx, lease)) {
                            throw new SQLException("the lease on note " + note + " was lost to a newer holder");
                        }
                        return debit(tx, "fault_note", "fault_repayment", note, amount, key);
                    };
                    return Library.asSideEffect(effects, payload, debit, () -> {})
                            .run(context);
                }
            });
        } catch (LockBusyException e) {
            return new String[] {"409", "note " + note + " is being processed, retry later"};
        }
        if (outcome.completed()) {
            return new String[] {String.valueOf(outcome.status()), outcome.body()};
        }
        return new String[] {String.valueOf(outcome.status()), String.valueOf(outcome.conflict())};
    }

    /** The canary: read, work, write back; no lock, no idempotency. */
    private String repayPlain(String note, long amount, String key) throws SQLException {
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

    private static String debit(Connection tx, String notes, String repayments, String note, long amount, String key)
            throws SQLException {
        try (PreparedStatement update =
                tx.prepareStatement("UPDATE " + notes + " SET balance = balance - ? WHERE no = ?")) {
            update.setLong(1, amount);
            update.setString(2, note);
            if (update.executeUpdate() != 1) {
                throw new SQLException("no note " + note);
            }
        }
        return Bookings.book(tx, repayments, key, note, amount);
    }
}
