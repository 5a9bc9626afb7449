package dev.leasehold.idempotency;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import dev.leasehold.LockKey;
import dev.leasehold.jdbc.FencedUpdate;
import dev.leasehold.testkit.TestServices;
import java.io.File;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.stream.Collectors;
import javax.sql.DataSource;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Exactly once end to end on one real database: the SUCCESS mark commits with the business write,
 * a crash between them cannot make a payment twice, a taken-over or expired claim cannot commit,
 * and heartbeats never starve behind a long transaction.
 */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
abstract class AbstractExactlyOnceTest extends AbstractStackTest {

    private static final Duration STALE = Duration.ofMillis(900);

    AbstractExactlyOnceTest() {
        super("pay-", STALE);
    }

    private IdempotentExecutor.Submission submission(String key) {
        return new IdempotentExecutor.Submission(
                scope, key, CanonicalJson.fingerprint("{\"amount\":35}"), null, Duration.ofSeconds(30));
    }

    private IdempotentExecutor.TransactionalWork pay(AtomicInteger runs) {
        return (tx, context) -> {
            runs.incrementAndGet();
            return new StoredResponse(
                    201, AbstractIdempotencyTest.book(tx, context.request().id(), 35));
        };
    }

    private int payments(String key) {
        return records.find(scope, key)
                .map(r -> AbstractIdempotencyTest.ledgerRows(dataSource(), r.id()))
                .orElse(0);
    }

    /** Retries like a client: until the request is no longer in progress (stale or done). */
    private IdempotentExecutor.Outcome retryUntilAnswered(String key, IdempotentExecutor.TransactionalWork work) {
        return await().atMost(Duration.ofSeconds(20))
                .pollInterval(Duration.ofMillis(100))
                .until(
                        () -> executor.executeInTransaction(submission(key), dataSource(), work),
                        outcome -> !(outcome instanceof IdempotentExecutor.Conflict));
    }

    // ------------------------------------------------------------------ crash between commit and mark

    @Test
    void haltRightAfterTheBusinessCommitLeavesExactlyOnePaymentAfterTheRetry() throws Exception {
        long started = System.nanoTime();
        assertThat(runChild("after-commit")).as("child halted at its commit").isEqualTo(CrashingPayment.HALTED);
        assertThat(payments("k-after"))
                .as("the payment committed before the halt")
                .isEqualTo(1);

        AtomicInteger runs = new AtomicInteger();
        IdempotentExecutor.Outcome retry = retryUntilAnswered("k-after", pay(runs));
        System.out.printf(
                "[crash %s] halted after commit: retry answered %d ms after the child started, replayed=%s, runs=%d,"
                        + " payments=%d%n",
                database().id(),
                TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - started),
                retry instanceof IdempotentExecutor.Completed c && c.replayed(),
                runs.get(),
                payments("k-after"));
        assertThat(retry).isInstanceOfSatisfying(IdempotentExecutor.Completed.class, done -> {
            assertThat(done.replayed())
                    .as("the SUCCESS mark committed with the payment")
                    .isTrue();
            assertThat(done.response().status()).isEqualTo(201);
        });
        assertThat(runs.get()).isZero();
        assertThat(payments("k-after")).as("exactly one payment").isEqualTo(1);
    }

    @Test
    void haltBeforeTheCommitLeavesNoPaymentAndTheRetryPaysOnce() throws Exception {
        assertThat(runChild("before-commit")).isEqualTo(CrashingPayment.HALTED);
        assertThat(payments("k-before")).as("nothing committed").isZero();

        AtomicInteger runs = new AtomicInteger();
        IdempotentExecutor.Outcome retry = retryUntilAnswered("k-before", pay(runs));
        assertThat(retry).isInstanceOfSatisfying(IdempotentExecutor.Completed.class, done -> assertThat(done.replayed())
                .isFalse());
        assertThat(runs.get()).as("the stale claim was taken over and run once").isEqualTo(1);
        assertThat(payments("k-before")).isEqualTo(1);
    }

    private int runChild(String mode) throws Exception {
        TestServices.JdbcEndpoint endpoint = endpoint();
        String classPath = System.getProperty("surefire.test.class.path", System.getProperty("java.class.path"));
        String key = mode.equals("after-commit") ? "k-after" : "k-before";
        Path log = Path.of("target", "crash-child-" + database().id() + "-" + mode + ".log");
        Process child = new ProcessBuilder(
                        Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                        "-Xmx128m",
                        "-XX:TieredStopAtLevel=1",
                        "-XX:+UseSerialGC",
                        "-cp",
                        Arrays.stream(classPath.split(File.pathSeparator))
                                .collect(Collectors.joining(File.pathSeparator)),
                        CrashingPayment.class.getName(),
                        endpoint.url(),
                        endpoint.user(),
                        endpoint.password(),
                        database().name(),
                        scope,
                        key,
                        String.valueOf(STALE.toMillis()),
                        mode)
                .redirectErrorStream(true)
                .redirectOutput(log.toFile())
                .start();
        try {
            assertThat(child.waitFor(60, TimeUnit.SECONDS))
                    .as("child ended, see " + log)
                    .isTrue();
            return child.exitValue();
        } finally {
            child.destroyForcibly();
        }
    }

    // ------------------------------------------------------------------ one transaction

    @Test
    void rollbackOfTheCallersTransactionLeavesNoReceipt() throws Exception {
        IdempotentExecutor.Started started = (IdempotentExecutor.Started) executor.start(submission("k-rollback"));
        try (IdempotentExecutor.Execution execution = started.execution();
                Connection tx = dataSource().getConnection()) {
            tx.setAutoCommit(false);
            AbstractIdempotencyTest.book(tx, execution.request().id(), 35);
            execution.completeInTransaction(tx, new StoredResponse(201, "receipt"));
            tx.rollback(); // the caller's transaction fails after the mark
            tx.setAutoCommit(true);
            execution.rolledBack(new IllegalStateException("caller rolled back"));
        }
        assertThat(records.find(scope, "k-rollback").orElseThrow().status())
                .as("no SUCCESS without the payment")
                .isEqualTo("ERROR");
        assertThat(payments("k-rollback")).isZero();

        AtomicInteger runs = new AtomicInteger();
        assertThat(executor.executeInTransaction(submission("k-rollback"), dataSource(), pay(runs)))
                .isInstanceOfSatisfying(IdempotentExecutor.Completed.class, d -> assertThat(d.replayed())
                        .isFalse());
        assertThat(runs.get()).isEqualTo(1);
        assertThat(payments("k-rollback")).isEqualTo(1);
    }

    @Test
    void workThatFailsRollsBackItsWriteAndIsRetried() {
        assertThatThrownBy(() -> executor.executeInTransaction(submission("k-fail"), dataSource(), (tx, c) -> {
                    AbstractIdempotencyTest.book(tx, c.request().id(), 35);
                    throw new java.io.IOException("card network refused");
                }))
                .isInstanceOf(java.io.IOException.class);
        assertThat(payments("k-fail")).isZero();
        assertThat(records.find(scope, "k-fail").orElseThrow().status()).isEqualTo("ERROR");
    }

    @Test
    void takenOverExecutionCannotCommitItsBusinessWrite() throws Exception {
        AtomicInteger runs = new AtomicInteger();
        assertThatThrownBy(() -> executor.executeInTransaction(submission("k-taken"), dataSource(), (tx, c) -> {
                    runs.incrementAndGet();
                    AbstractIdempotencyTest.book(tx, c.request().id(), 35);
                    takeOver(c.request()); // another execution takes the claim while this one runs
                    return new StoredResponse(201, "late");
                }))
                .isInstanceOf(IdempotencyConflictException.class)
                .hasMessageContaining("taken over");
        assertThat(runs.get()).isEqualTo(1);
        assertThat(payments("k-taken"))
                .as("the taken-over execution's payment rolled back with its refused mark")
                .isZero();
    }

    @Test
    @SuppressWarnings("deprecation") // the request's fence is keyed by its resource name, not a LockKey yet
    void requestFenceLetsFencedUpdateRefuseAnOlderExecution() throws Exception {
        FencedUpdate fenced = FencedUpdate.on(dataSource(), database());
        AtomicBoolean fresh = new AtomicBoolean();
        executor.executeInTransaction(submission("k-fence-1"), dataSource(), (tx, c) -> {
            fresh.set(fenced.tryAccept(tx, c.request().fenceResource(), c.fence()));
            return new StoredResponse(200, "ok");
        });
        assertThat(fresh).as("the owner's fence is accepted").isTrue();

        AtomicBoolean stale = new AtomicBoolean(true);
        assertThatThrownBy(() -> executor.executeInTransaction(submission("k-fence-2"), dataSource(), (tx, c) -> {
                    // A newer execution of the same request wrote under a higher fence meanwhile.
                    fenced.run(c.request().fenceResource(), c.fence() + 1, conn -> 1);
                    stale.set(fenced.tryAccept(tx, c.request().fenceResource(), c.fence()));
                    AbstractIdempotencyTest.book(tx, c.request().id(), 35);
                    if (!stale.get()) {
                        throw new IllegalStateException("fence " + c.fence() + " is stale");
                    }
                    return new StoredResponse(200, "must not commit");
                }))
                .hasMessageContaining("is stale");
        assertThat(stale).as("the older execution's fence is refused").isFalse();
        assertThat(payments("k-fence-2")).isZero();
    }

    @Test
    void commitThatFailsIsReportedAsUnknownAndTheRetryPaysOnce() throws Exception {
        DataSource lostBeforeCommit = CommitHooks.wrap(dataSource(), real -> {
            real.rollback();
            throw new SQLException("connection lost during commit (simulated)", "08006");
        });
        assertThatThrownBy(() ->
                        executor.executeInTransaction(submission("k-lost"), lostBeforeCommit, pay(new AtomicInteger())))
                .isInstanceOf(CommitOutcomeUnknownException.class)
                .hasMessageContaining("retrying with the same idempotency key is safe");
        assertThat(payments("k-lost")).isZero();

        AtomicInteger runs = new AtomicInteger();
        IdempotentExecutor.Outcome retry = executor.executeInTransaction(submission("k-lost"), dataSource(), pay(runs));
        assertThat(retry).isInstanceOfSatisfying(IdempotentExecutor.Completed.class, d -> assertThat(d.replayed())
                .isFalse());
        assertThat(payments("k-lost")).isEqualTo(1);
    }

    @Test
    void commitWhoseReplyIsLostIsReportedAsUnknownAndTheRetryReplays() throws Exception {
        DataSource lostAfterCommit = CommitHooks.wrap(dataSource(), real -> {
            real.commit();
            throw new SQLException("connection lost after commit (simulated)", "08006");
        });
        assertThatThrownBy(() ->
                        executor.executeInTransaction(submission("k-reply"), lostAfterCommit, pay(new AtomicInteger())))
                .isInstanceOf(CommitOutcomeUnknownException.class);
        AtomicInteger runs = new AtomicInteger();
        IdempotentExecutor.Outcome retry =
                executor.executeInTransaction(submission("k-reply"), dataSource(), pay(runs));
        assertThat(retry).isInstanceOfSatisfying(IdempotentExecutor.Completed.class, d -> assertThat(d.replayed())
                .isTrue());
        assertThat(runs.get()).isZero();
        assertThat(payments("k-reply")).isEqualTo(1);
    }

    @Test
    void sessionLeaseLostAfterCommittedWorkDoesNotMarkItError() throws Exception {
        AtomicInteger runs = new AtomicInteger();
        IdempotentExecutor.Submission withSession = new IdempotentExecutor.Submission(
                scope,
                "k-session",
                CanonicalJson.fingerprint("{\"amount\":35}"),
                LockKey.of("session", scope),
                Duration.ofMillis(600));
        IdempotentExecutor.RequestWork work = context -> {
            runs.incrementAndGet();
            String id;
            try (Connection c = dataSource().getConnection()) {
                id = AbstractIdempotencyTest.book(c, context.request().id(), 35); // committed (autocommit)
            }
            stealSessionLease(context.request().token());
            await().atMost(Duration.ofSeconds(10))
                    .until(() -> !context.session().orElseThrow().isHeld());
            return new StoredResponse(201, id);
        };
        IdempotentExecutor.Outcome first = executor.execute(withSession, work);
        assertThat(first).isInstanceOf(IdempotentExecutor.Completed.class);
        assertThat(records.find(scope, "k-session").orElseThrow().status()).isEqualTo("SUCCESS");
        IdempotentExecutor.Outcome retry = executor.execute(withSession, work);
        assertThat(retry).isInstanceOfSatisfying(IdempotentExecutor.Completed.class, d -> assertThat(d.replayed())
                .isTrue());
        assertThat(runs.get()).isEqualTo(1);
        assertThat(payments("k-session")).isEqualTo(1);
    }

    // ------------------------------------------------------------------ heartbeats

    @Test
    void heartbeatsDoNotStarveBehindALongEffectTransaction() throws Exception {
        Duration hold = STALE.multipliedBy(3);
        CountDownLatch longEffectRunning = new CountDownLatch(1);
        CountDownLatch release = new CountDownLatch(1);
        CountDownLatch paymentRunning = new CountDownLatch(1);
        AtomicInteger paymentRuns = new AtomicInteger();
        ExecutorService pool = Executors.newCachedThreadPool();
        ScheduledExecutorService resubmitter = Executors.newSingleThreadScheduledExecutor();
        List<Future<?>> resubmits = new ArrayList<>();
        try {
            // A: a request whose side effect keeps its transaction open three stale thresholds long.
            Future<IdempotentExecutor.Outcome> a = pool.submit(() -> executor.execute(submission("k-long"), c -> {
                effects.runOnce(c.request(), "long_booking", "{}", String.class, tx -> {
                    String id = AbstractIdempotencyTest.book(tx, c.request().id(), 1);
                    longEffectRunning.countDown();
                    release.await(30, TimeUnit.SECONDS);
                    return id;
                });
                return new StoredResponse(200, "long done");
            }));
            assertThat(longEffectRunning.await(10, TimeUnit.SECONDS)).isTrue();

            // B: a payment in flight at the same time; it writes once it is let go.
            IdempotentExecutor.RequestWork payB = c -> {
                paymentRuns.incrementAndGet();
                paymentRunning.countDown();
                release.await(30, TimeUnit.SECONDS);
                try (Connection conn = dataSource().getConnection()) {
                    return new StoredResponse(
                            201, AbstractIdempotencyTest.book(conn, c.request().id(), 35));
                }
            };
            Future<IdempotentExecutor.Outcome> b = pool.submit(() -> executor.execute(submission("k-pay"), payB));
            assertThat(paymentRunning.await(10, TimeUnit.SECONDS)).isTrue();

            // Clients resubmit both keys every 100 ms while A's transaction stays open.
            AtomicInteger inProgress = new AtomicInteger();
            for (String key : List.of("k-long", "k-pay")) {
                resubmits.add(resubmitter.scheduleAtFixedRate(
                        () -> pool.submit(() -> {
                            IdempotentExecutor.Outcome o = key.equals("k-pay")
                                    ? executor.execute(submission(key), payB)
                                    : executor.execute(submission(key), c -> new StoredResponse(200, "again"));
                            if (o instanceof IdempotentExecutor.Conflict) {
                                inProgress.incrementAndGet();
                            }
                            return o;
                        }),
                        100,
                        100,
                        TimeUnit.MILLISECONDS));
            }
            long holdUntil = System.nanoTime() + hold.toNanos();
            await().atMost(hold.plusSeconds(10))
                    .pollInterval(Duration.ofMillis(50))
                    .until(() -> System.nanoTime() >= holdUntil);
            resubmits.forEach(f -> f.cancel(false));
            release.countDown();
            a.get(30, TimeUnit.SECONDS);
            try {
                b.get(30, TimeUnit.SECONDS);
            } catch (java.util.concurrent.ExecutionException e) {
                // Taken over: then the second execution's payment is the one that counts.
            }
            resubmitter.shutdown();
            pool.shutdown();
            assertThat(pool.awaitTermination(30, TimeUnit.SECONDS)).isTrue();
            System.out.printf(
                    "[starvation %s] stale-after %d ms, long transaction %d ms, %d resubmits answered in"
                            + " progress, payment runs %d, payments %d, heartbeat failures %d%n",
                    database().id(),
                    STALE.toMillis(),
                    hold.toMillis(),
                    inProgress.get(),
                    paymentRuns.get(),
                    payments("k-pay"),
                    executor.heartbeatFailures());
            assertThat(paymentRuns.get())
                    .as("the live payment was never taken over")
                    .isEqualTo(1);
            assertThat(payments("k-pay")).as("exactly one payment").isEqualTo(1);
            assertThat(records.find(scope, "k-long").orElseThrow().status()).isEqualTo("SUCCESS");
        } finally {
            release.countDown();
            resubmitter.shutdownNow();
            pool.shutdownNow();
        }
    }

    @Test
    void claimThatCannotBeRenewedExpiresAndCannotCommitItsMark() throws Exception {
        CountDownLatch expired = new CountDownLatch(1);
        ExecutorService pool = Executors.newSingleThreadExecutor();
        try (Connection blocker = dataSource().getConnection()) {
            Future<IdempotentExecutor.Outcome> run =
                    pool.submit(() -> executor.executeInTransaction(submission("k-expire"), dataSource(), (tx, c) -> {
                        lockRequestRow(blocker, c.request().id()); // every heartbeat now times out
                        // First a heartbeat that timed out, then the expiry (asking before could end the
                        // heartbeats before one had failed).
                        await().atMost(Duration.ofSeconds(20)).until(() -> executor.heartbeatFailures() > 0);
                        await().atMost(Duration.ofSeconds(20)).until(() -> expired(c));
                        expired.countDown();
                        AbstractIdempotencyTest.book(tx, c.request().id(), 35);
                        return new StoredResponse(201, "too late");
                    }));
            assertThat(expired.await(30, TimeUnit.SECONDS)).isTrue();
            blocker.rollback(); // let the request be marked ERROR
            blocker.setAutoCommit(true);
            assertThatThrownBy(() -> run.get(30, TimeUnit.SECONDS)).hasCauseInstanceOf(ClaimExpiredException.class);
        } finally {
            pool.shutdownNow();
        }
        assertThat(executor.heartbeatFailures())
                .as("failed heartbeats are counted")
                .isPositive();
        assertThat(payments("k-expire")).isZero();
        assertThat(records.find(scope, "k-expire").orElseThrow().status()).isEqualTo("ERROR");
    }

    @Test
    void expiredClaimIsNotRevivedByALateHeartbeat() throws Exception {
        // Heartbeats wait 30 s for the row lock: the first one is still waiting when the claim expires.
        stack.close();
        stack = Stack.open(
                RequestRecords.builder(dataSource())
                        .database(database())
                        .staleAfter(STALE)
                        .heartbeatLockTimeout(Duration.ofSeconds(30)),
                dataSource(),
                database());
        records = stack.records();
        executor = stack.executor();
        ExecutorService pool = Executors.newSingleThreadExecutor();
        try (Connection blocker = dataSource().getConnection()) {
            Future<IdempotentExecutor.Outcome> run =
                    pool.submit(() -> executor.executeInTransaction(submission("k-late"), dataSource(), (tx, c) -> {
                        String id = c.request().id();
                        long renewed = updatedAt(id);
                        lockRequestRow(blocker, id);
                        await().atMost(Duration.ofSeconds(20)).until(() -> waitsBehind(blocker));
                        await().atMost(Duration.ofSeconds(20)).until(() -> expired(c));
                        blocker.rollback(); // the waiting heartbeat gets through now, after the deadline
                        blocker.setAutoCommit(true);
                        await().atMost(Duration.ofSeconds(20)).until(() -> updatedAt(id) != renewed);
                        AbstractIdempotencyTest.book(tx, id, 35);
                        return new StoredResponse(201, "revived?");
                    }));
            assertThatThrownBy(() -> run.get(60, TimeUnit.SECONDS)).hasCauseInstanceOf(ClaimExpiredException.class);
        } finally {
            pool.shutdownNow();
        }
        assertThat(payments("k-late"))
                .as("the expired execution's payment rolled back")
                .isZero();
        assertThat(records.find(scope, "k-late").orElseThrow().status()).isEqualTo("ERROR");
    }

    // ------------------------------------------------------------------ helpers

    private static boolean expired(RequestContext context) {
        try {
            context.assertOwned();
            return false;
        } catch (ClaimExpiredException e) {
            return true;
        }
    }

    private long updatedAt(String id) throws SQLException {
        try (Connection c = dataSource().getConnection();
                PreparedStatement s = c.prepareStatement("SELECT updated_at_ms FROM leasehold_request WHERE id = ?")) {
            s.setString(1, id);
            try (ResultSet rs = s.executeQuery()) {
                assertThat(rs.next()).isTrue();
                return rs.getLong(1);
            }
        }
    }

    /** Whether some statement waits for a lock that {@code blocker}'s transaction holds. */
    private boolean waitsBehind(Connection blocker) throws SQLException {
        String self;
        String waiting;
        switch (database()) {
            case H2 -> {
                self = "SELECT SESSION_ID()";
                waiting = "SELECT COUNT(*) FROM INFORMATION_SCHEMA.SESSIONS WHERE BLOCKER_ID = ?";
            }
            case POSTGRESQL -> {
                self = "SELECT pg_backend_pid()";
                waiting = "SELECT COUNT(*) FROM pg_stat_activity WHERE ? = ANY(pg_blocking_pids(pid))";
            }
            default -> {
                self = "SELECT CONNECTION_ID()";
                waiting = "SELECT COUNT(*) FROM information_schema.INNODB_LOCK_WAITS w"
                        + " JOIN information_schema.INNODB_TRX t ON t.trx_id = w.blocking_trx_id"
                        + " WHERE t.trx_mysql_thread_id = ?";
            }
        }
        int id;
        try (PreparedStatement s = blocker.prepareStatement(self);
                ResultSet rs = s.executeQuery()) {
            rs.next();
            id = rs.getInt(1);
        }
        try (Connection c = dataSource().getConnection();
                PreparedStatement s = c.prepareStatement(waiting)) {
            s.setInt(1, id);
            try (ResultSet rs = s.executeQuery()) {
                rs.next();
                return rs.getLong(1) > 0;
            }
        }
    }

    private void lockRequestRow(Connection blocker, String id) throws SQLException {
        blocker.setAutoCommit(false);
        try (PreparedStatement s =
                blocker.prepareStatement("UPDATE leasehold_request SET updated_at_ms = updated_at_ms WHERE id = ?")) {
            s.setString(1, id);
            s.executeUpdate();
        }
    }

    private void takeOver(RequestHandle handle) throws SQLException {
        try (Connection c = dataSource().getConnection();
                PreparedStatement s = c.prepareStatement(
                        "UPDATE leasehold_request SET lease_token = ?, fence = fence + 1 WHERE id = ?")) {
            s.setString(1, Jdbc.newId());
            s.setString(2, handle.id());
            s.executeUpdate();
        }
    }

    private void stealSessionLease(String ownerToken) throws SQLException {
        try (Connection c = dataSource().getConnection();
                PreparedStatement s = c.prepareStatement(
                        "UPDATE leasehold_lease SET owner_token = ? WHERE owner_token = ? OR owner_token LIKE ?")) {
            // The store keeps the owner's token with the grant's id after a dot.
            s.setString(1, "stolen-" + UUID.randomUUID());
            s.setString(2, ownerToken);
            s.setString(3, ownerToken + ".%");
            assertThat(s.executeUpdate()).isEqualTo(1);
        }
    }
}
