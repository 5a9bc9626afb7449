package dev.leasehold.idempotency;

import com.zaxxer.hikari.HikariDataSource;
import dev.leasehold.LockService;
import dev.leasehold.jdbc.Database;
import dev.leasehold.jdbc.JdbcLeaseStore;
import java.time.Duration;
import javax.sql.DataSource;

/**
 * A child JVM that pays once through {@link IdempotentExecutor#executeInTransaction} and dies by
 * {@link Runtime#halt} at its commit: {@code after-commit} right after the commit returned (the
 * payment and its SUCCESS mark are durable, nothing after it runs), {@code before-commit} instead of
 * the commit. Arguments: url user password database scope key staleAfterMs mode.
 */
public final class CrashingPayment {

    static final int HALTED = 77;

    private CrashingPayment() {}

    public static void main(String[] args) throws Exception {
        String url = args[0];
        Database database = Database.valueOf(args[3]);
        String scope = args[4];
        String key = args[5];
        Duration staleAfter = Duration.ofMillis(Long.parseLong(args[6]));
        boolean afterCommit = args[7].equals("after-commit");
        HikariDataSource pool = AbstractIdempotencyTest.pool(url, args[1], args[2], database);
        DataSource halting = CommitHooks.wrap(pool, real -> {
            if (afterCommit) {
                real.commit();
            }
            Runtime.getRuntime().halt(HALTED);
        });
        RequestRecords records = RequestRecords.builder(pool)
                .database(database)
                .staleAfter(staleAfter)
                .build();
        LockService locks = LockService.builder(
                        JdbcLeaseStore.builder(pool).database(database).build())
                .build();
        IdempotentExecutor executor = new IdempotentExecutor(records, locks);
        executor.executeInTransaction(
                new IdempotentExecutor.Submission(
                        scope, key, CanonicalJson.fingerprint("{\"amount\":35}"), null, Duration.ofSeconds(30)),
                halting,
                (tx, context) -> new StoredResponse(
                        201,
                        "{\"payment\":\""
                                + AbstractIdempotencyTest.book(
                                        tx, context.request().id(), 35) + "\"}"));
        System.exit(1); // not reached: the commit halts the JVM
    }
}
