package dev.leasehold.faults;

import dev.leasehold.LockKey;
import dev.leasehold.LockService;
import dev.leasehold.idempotency.IdempotentExecutor;
import dev.leasehold.idempotency.SideEffects;
import java.sql.Connection;
import java.time.Duration;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import javax.sql.DataSource;

/**
 * The side-effects service JVM of the crashed-service scenario, serving payments from its stdin as a
 * web service would from HTTP, several at a time: each payment is a side effect of its idempotent
 * request, committed with the effect's mark ({@code SideEffects}), while the request holds the
 * lease of its account's session ({@code session/<account>}, taken without waiting, on the SQL
 * lease store of the private database). (The request-records half is the Spring Boot service
 * {@link PaymentService}.) Arguments: the private database ({@link PrivateDatabase.Spec}), the
 * stale threshold in ms and the session lease in ms. Commands:
 *
 * <ul>
 *   <li>{@code REQ key account amount [hang]} → {@code ACK key receipt}, {@code RETRY key reason}
 *       (409, in progress or the session busy) or {@code ERROR key message}: an idempotent payment
 *   <li>{@code PLAIN key account amount [hang]} → {@code PAID key receipt}: the canary, a payment
 *       endpoint without idempotency
 * </ul>
 *
 * With {@code hang}, the service replies {@code COMMITTED key} right after the business commit
 * and then never answers: the parent kills it there.
 */
public final class ServiceMain {

    private ServiceMain() {}

    public static void main(String[] args) throws Exception {
        PrivateDatabase.Spec db = PrivateDatabase.Spec.decode(args[0]);
        Duration staleAfter = Duration.ofMillis(Long.parseLong(args[1]));
        Duration sessionLease = Duration.ofMillis(Long.parseLong(args[2]));
        ChildJvm.Io io = new ChildJvm.Io();
        ExecutorService workers = Executors.newFixedThreadPool(8);
        try (var pool = db.pool("service", 10);
                Library.Store store = Library.jdbcStore(pool, db.database());
                LockService locks = Library.locks(store.store());
                IdempotentExecutor executor =
                        Library.executor(Library.records(pool, db.database(), staleAfter), locks)) {
            SideEffects effects = Library.sideEffects(pool, db.database(), staleAfter);
            io.reply("READY " + ProcessHandle.current().pid());
            String line;
            while ((line = io.command()) != null) {
                String[] c = line.split(" ");
                boolean hang = c.length > 4 && c[4].equals("hang");
                Runnable afterCommit = () -> {
                    if (hang) {
                        io.reply("COMMITTED " + c[1]);
                        hangForever();
                    }
                };
                workers.submit(() -> serve(io, pool, executor, effects, sessionLease, c, afterCommit));
            }
        } finally {
            workers.shutdownNow();
        }
    }

    private static void serve(
            ChildJvm.Io io,
            DataSource pool,
            IdempotentExecutor executor,
            SideEffects effects,
            Duration sessionLease,
            String[] c,
            Runnable afterCommit) {
        String key = c[1];
        String account = c[2];
        long amount = Long.parseLong(c[3]);
        try {
            Library.BusinessWrite write = (tx, context) -> Bookings.book(tx, "fault_payment", key, account, amount);
            if (c[0].equals("PLAIN")) {
                String receipt;
                try (Connection tx = pool.getConnection()) {
                    tx.setAutoCommit(false);
                    receipt = Bookings.book(tx, "fault_plain_payment", key, account, amount);
                    tx.commit();
                }
                afterCommit.run();
                io.reply("PAID " + key + " " + receipt);
                return;
            }
            String payload = "{\"account\":\"" + account + "\",\"amount\":" + amount + "}";
            Library.RequestOutcome outcome = Library.request(
                    executor,
                    "payments",
                    key,
                    payload,
                    LockKey.of("session", account),
                    sessionLease,
                    Library.asSideEffect(effects, payload, write, afterCommit));
            if (outcome.completed()) {
                io.reply("ACK " + key + " " + outcome.body());
            } else {
                io.reply("RETRY " + key + " " + outcome.conflict());
            }
        } catch (Exception e) {
            io.reply("ERROR " + key + " " + String.valueOf(e).replace('\n', ' '));
        }
    }

    private static void hangForever() {
        try {
            new CountDownLatch(1).await(); // the parent kills this JVM here
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}
