package dev.leasehold.idempotency;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import dev.leasehold.LeaseOptions;
import dev.leasehold.LeaseStoreException;
import dev.leasehold.LockKey;
import dev.leasehold.LockOwner;
import dev.leasehold.jdbc.Database;
import dev.leasehold.testkit.TestServices;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import javax.sql.DataSource;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Request and side-effect records on one real database. Subclasses say how to reach it and how to
 * kill a connection from the server side.
 */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
abstract class AbstractIdempotencyTest extends AbstractStackTest {

    private static final Duration STALE = Duration.ofMillis(400);

    AbstractIdempotencyTest() {
        super("session-", STALE);
    }

    /**
     * Kills the session of {@code victim} from another connection. Embedded H2 has no server session:
     * there the lost connection is simulated, and the transaction rolls back the same way.
     */
    protected void killFromServer(Connection victim) throws SQLException {
        if (database() == Database.H2) {
            throw new SQLException("connection lost (simulated for embedded H2)", "08006");
        }
        try (Connection admin = dataSource().getConnection()) {
            TestServices.killFromServer(victim, admin);
        }
    }

    static HikariDataSource pool(String url, String user, String password, Database database) {
        HikariConfig config = new HikariConfig();
        config.setJdbcUrl(url);
        config.setUsername(user);
        config.setPassword(password);
        config.setMaximumPoolSize(16);
        config.setConnectionTimeout(60_000);
        HikariDataSource dataSource = new HikariDataSource(config);
        try {
            IdempotencySchema.create(dataSource, database);
            try (Connection c = dataSource.getConnection();
                    Statement s = c.createStatement()) {
                s.execute("CREATE TABLE IF NOT EXISTS leasehold_test_ledger (id VARCHAR(64) NOT NULL PRIMARY KEY,"
                        + " request_id VARCHAR(32) NOT NULL, amount BIGINT NOT NULL)");
            }
        } catch (SQLException e) {
            dataSource.close();
            throw new IllegalStateException("cannot create the schema on " + url, e);
        }
        return dataSource;
    }

    private static String fingerprint(String json) {
        return CanonicalJson.fingerprint(json);
    }

    private IdempotentExecutor.Submission submission(String key, String payload) {
        return new IdempotentExecutor.Submission(
                scope, key, fingerprint(payload), LockKey.of("session", scope), Duration.ofSeconds(30));
    }

    private RequestHandle claim(String key, String payload) {
        Claim claim = records.begin(scope, key, fingerprint(payload));
        assertThat(claim).isInstanceOf(Claim.Claimed.class);
        return ((Claim.Claimed) claim).handle();
    }

    // ------------------------------------------------------------------ requests

    @Test
    void sixtyFourConcurrentSubmitsOfOneKeyExecuteOnce() throws Exception {
        int callers = 64;
        AtomicInteger executions = new AtomicInteger();
        CyclicBarrier start = new CyclicBarrier(callers);
        ExecutorService pool = Executors.newFixedThreadPool(callers);
        List<Future<IdempotentExecutor.Outcome>> outcomes = new ArrayList<>();
        try {
            for (int i = 0; i < callers; i++) {
                outcomes.add(pool.submit(() -> {
                    start.await();
                    return executor.execute(submission("pay-1", "{\"amount\":35}"), context -> {
                        executions.incrementAndGet();
                        Thread.sleep(300); // the work's duration: the other callers arrive while it runs
                        return new StoredResponse(201, "{\"paid\":35}");
                    });
                }));
            }
            int completed = 0;
            for (Future<IdempotentExecutor.Outcome> future : outcomes) {
                IdempotentExecutor.Outcome outcome = future.get(100, TimeUnit.SECONDS); // an exception here = a 500
                if (outcome instanceof IdempotentExecutor.Completed done) {
                    assertThat(done.response()).isEqualTo(new StoredResponse(201, "{\"paid\":35}"));
                    completed++;
                } else {
                    assertThat(outcome)
                            .isIn(
                                    new IdempotentExecutor.Conflict(IdempotencyConflictException.Reason.IN_PROGRESS),
                                    new IdempotentExecutor.Conflict(IdempotencyConflictException.Reason.SESSION_BUSY));
                }
            }
            assertThat(executions.get()).as("executions").isEqualTo(1);
            assertThat(completed).isGreaterThanOrEqualTo(1);
        } finally {
            pool.shutdownNow();
        }
        IdempotentExecutor.Outcome later = executor.execute(submission("pay-1", "{\"amount\":35.0}"), c -> {
            throw new AssertionError("a replay must not run");
        });
        assertThat(later).isEqualTo(new IdempotentExecutor.Completed(new StoredResponse(201, "{\"paid\":35}"), true));
    }

    @Test
    void keyReusedWithAnotherPayloadIsAMismatch() throws Exception {
        executor.execute(submission("pay-2", "{\"amount\":35}"), c -> new StoredResponse(200, "ok"));
        assertThat(executor.execute(submission("pay-2", "{\"amount\":36}"), c -> {
                    throw new AssertionError("must not run");
                }))
                .isInstanceOf(IdempotentExecutor.Mismatch.class);
        assertThat(records.begin(scope, "pay-2", fingerprint("{\"amount\":36}")))
                .isInstanceOf(Claim.Mismatch.class);
    }

    @Test
    void duplicateSubmitDoesNotDisturbOwner() throws Exception {
        RequestHandle owner = claim("pay-3", "{\"amount\":35}");
        Map<String, Object> before = rawRequest(owner.id());

        assertThat(records.begin(scope, "pay-3", fingerprint("{\"amount\":35}")))
                .isInstanceOf(Claim.InProgress.class);
        RequestHandle forged = new RequestHandle(
                owner.id(), scope, "pay-3", Jdbc.newId(), owner.fence(), Claim.Kind.NEW, null, null, 0);
        assertThat(records.fail(forged, "duplicate thinks it failed")).isFalse();
        assertThat(records.heartbeat(forged)).isFalse();
        assertThatThrownBy(() -> records.complete(forged, new StoredResponse(200, "forged")))
                .isInstanceOf(IdempotencyConflictException.class);
        assertThat(rawRequest(owner.id()))
                .as("record untouched by the duplicate")
                .isEqualTo(before);

        records.complete(owner, new StoredResponse(200, "done"));
        assertThat(records.find(scope, "pay-3").orElseThrow().status()).isEqualTo("SUCCESS");
    }

    @Test
    void retryPathThatFailsAfterTakingTheSessionLeaseStillReleasesIt() throws Exception {
        LockKey session = LockKey.of("session", scope);
        assertThatThrownBy(() -> executor.execute(submission("pay-4", "{\"a\":1}"), c -> {
                    throw new IllegalStateException("model timed out");
                }))
                .hasMessageContaining("model timed out");
        assertThat(records.find(scope, "pay-4").orElseThrow().status()).isEqualTo("ERROR");
        assertThat(locks.inspect(session))
                .as("session free after the first failure")
                .isEmpty();

        // The retry re-claims the ERROR record, takes the session lease, and fails again.
        assertThatThrownBy(() -> executor.execute(submission("pay-4", "{\"a\":1}"), c -> {
                    assertThat(c.request().kind()).isEqualTo(Claim.Kind.RETRY);
                    assertThat(locks.inspect(session)).isPresent();
                    throw new IllegalStateException("model timed out again");
                }))
                .hasMessageContaining("again");
        assertThat(locks.inspect(session))
                .as("session lease released on the retry path")
                .isEmpty();

        // A retry whose completion finds the request taken over also releases the session.
        assertThatThrownBy(() -> executor.execute(submission("pay-4", "{\"a\":1}"), c -> {
                    forceTakeOver(c.request());
                    return new StoredResponse(200, "late");
                }))
                .isInstanceOf(IdempotencyConflictException.class);
        assertThat(locks.inspect(session)).isEmpty();
    }

    private void forceTakeOver(RequestHandle handle) throws SQLException {
        try (Connection c = dataSource().getConnection();
                PreparedStatement s = c.prepareStatement("UPDATE leasehold_request SET lease_token = ? WHERE id = ?")) {
            s.setString(1, Jdbc.newId());
            s.setString(2, handle.id());
            s.executeUpdate();
        }
    }

    @Test
    void sessionBusyGivesTheClaimBack() throws Exception {
        LockKey session = LockKey.of("session", scope);
        try (var held = locks.tryAcquire(session, LeaseOptions.defaults(), LockOwner.create("other message"))
                .orElseThrow()) {
            assertThat(executor.execute(submission("pay-5", "{}"), c -> new StoredResponse(200, "x")))
                    .isEqualTo(new IdempotentExecutor.Conflict(IdempotencyConflictException.Reason.SESSION_BUSY));
            assertThat(held.isHeld()).isTrue();
        }
        assertThat(records.find(scope, "pay-5").orElseThrow().status())
                .as("a new claim given back")
                .isEqualTo("ERROR");
        assertThat(executor.execute(submission("pay-5", "{}"), c -> new StoredResponse(200, "x")))
                .isEqualTo(new IdempotentExecutor.Completed(new StoredResponse(200, "x"), false));
    }

    @Test
    void staleRequestIsTakenOverByTheDatabaseClockAndTheFormerOwnerCannotComplete() {
        RequestHandle first = claim("pay-6", "{}");
        assertThat(records.begin(scope, "pay-6", fingerprint("{}"))).isInstanceOf(Claim.InProgress.class);

        RequestHandle second = await().atMost(Duration.ofSeconds(10))
                .until(
                        () -> records.begin(scope, "pay-6", fingerprint("{}")) instanceof Claim.Claimed c
                                ? c.handle()
                                : null,
                        h -> h != null);
        assertThat(second.kind()).isEqualTo(Claim.Kind.TAKE_OVER);
        assertThat(second.fence()).isGreaterThan(first.fence());
        assertThatThrownBy(() -> records.complete(first, new StoredResponse(200, "late")))
                .isInstanceOf(IdempotencyConflictException.class)
                .hasMessageContaining("taken over");

        // S1.6: a take-over that cannot proceed restores the record for its previous owner.
        assertThat(records.giveBack(second, "session busy")).isTrue();
        records.complete(first, new StoredResponse(200, "first after all"));
        assertThat(records.find(scope, "pay-6").orElseThrow().response().body()).isEqualTo("first after all");
    }

    @Test
    @Timeout(value = 30, unit = TimeUnit.SECONDS)
    void aStaleRequestWhoseOwnersTransactionIsStillOpenIsInProgressNotAStoreFailure() throws SQLException {
        // The owner marked SUCCESS in its business transaction and has not committed; its heartbeat
        // waits behind its own row lock, so the committed record looks stale. A resubmit may not
        // take it over, must not hang behind the lock, and must not fail as if the store were down.
        RequestHandle owner = claim("pay-open", "{}");
        backdateHeartbeat(owner.id(), Duration.ofHours(1));
        try (Connection business = dataSource().getConnection()) {
            business.setAutoCommit(false);
            records.completeInTransaction(business, owner, new StoredResponse(201, "paid"));
            long start = System.nanoTime();
            Claim again = records.begin(scope, "pay-open", fingerprint("{}"));
            Duration took = Duration.ofNanos(System.nanoTime() - start);
            assertThat(again).isInstanceOf(Claim.InProgress.class);
            assertThat(took).as("the resubmit waited for the open transaction").isLessThan(Duration.ofSeconds(5));
            business.commit();
        }
        assertThat(records.begin(scope, "pay-open", fingerprint("{}"))).isInstanceOf(Claim.Replay.class);
    }

    /**
     * A record operation is its own atomic step: given the caller's connection inside the caller's
     * open transaction (Spring's transaction-aware data source), it neither commits nor joins that
     * transaction. It refuses, and the caller's later rollback undoes all of the caller's work.
     */
    @Test
    void aRecordIsNeverPartOfACallersTransaction() {
        DataSource plain = dataSource();
        var transactionAware = new org.springframework.jdbc.datasource.TransactionAwareDataSourceProxy(plain);
        RequestRecords onCallersConnection =
                RequestRecords.builder(transactionAware).database(database()).build();
        var transactions = new org.springframework.transaction.support.TransactionTemplate(
                new org.springframework.jdbc.datasource.DataSourceTransactionManager(plain));
        String requestId = "caller-" + UUID.randomUUID().toString().substring(0, 20);
        RuntimeException[] refusal = new RuntimeException[1];
        transactions.executeWithoutResult(status -> {
            try (Connection caller = transactionAware.getConnection()) {
                book(caller, requestId, 7);
            } catch (SQLException e) {
                throw new IllegalStateException(e);
            }
            try {
                onCallersConnection.begin(scope, "callers-transaction", fingerprint("{}"));
            } catch (RuntimeException e) {
                refusal[0] = e;
            }
            status.setRollbackOnly();
        });
        assertThat(ledgerRows(requestId))
                .as("the caller's rolled-back work was not committed by the records")
                .isZero();
        assertThat(refusal[0]).isInstanceOf(IllegalStateException.class).hasMessageContaining("open transaction");
        assertThat(records.find(scope, "callers-transaction")).isEmpty();
    }

    @Test
    void completedRequestsArePurgedAfterRetentionButNeverInFlightOnes() {
        RequestRecords shortLived = RequestRecords.builder(dataSource())
                .database(database())
                .retention(Duration.ofMillis(100))
                .build();
        RequestHandle done = ((Claim.Claimed) shortLived.begin(scope, "old", fingerprint("{}"))).handle();
        shortLived.complete(done, new StoredResponse(200, "x"));
        RequestHandle running = ((Claim.Claimed) shortLived.begin(scope, "running", fingerprint("{}"))).handle();

        await().atMost(Duration.ofSeconds(10)).until(() -> {
            shortLived.purgeExpired(1000);
            return shortLived.find(scope, "old").isEmpty();
        });
        assertThat(shortLived.find(scope, "running")).isPresent();
        assertThat(shortLived.heartbeat(running)).isTrue();
    }

    // ------------------------------------------------------------------ exact responses, keys, schema

    @Test
    void storedResponseComesBackByteIdentical() {
        byte[] body = {'{', '"', 'a', '"', ':', '3', '5', '.', '1', '0', '}', (byte) 0xFF, 0, (byte) 0xC3};
        List<StoredResponse.Header> headers = List.of(
                new StoredResponse.Header("Location", "/payments/p-1"),
                new StoredResponse.Header("ETag", "\"v1\""),
                new StoredResponse.Header("Set-Cookie", "a=1"),
                new StoredResponse.Header("Set-Cookie", "b=2"),
                new StoredResponse.Header("X-Note", "  spaces\tand: colons  "),
                new StoredResponse.Header("X-Empty", ""));
        StoredResponse response = StoredResponse.of(201, "application/problem+json; charset=utf-8", headers, body);
        RequestHandle handle = claim("exact-1", "{}");
        records.complete(handle, response);

        Claim replay = records.begin(scope, "exact-1", fingerprint("{}"));
        assertThat(replay).isInstanceOfSatisfying(Claim.Replay.class, r -> {
            assertThat(r.response()).isEqualTo(response);
            assertThat(r.response().bodyBytes()).containsExactly(body);
            assertThat(r.response().headers()).containsExactlyElementsOf(headers);
            assertThat(r.response().contentType()).isEqualTo("application/problem+json; charset=utf-8");
        });
        RequestHandle empty = claim("exact-2", "{}");
        records.complete(empty, StoredResponse.of(204, null, List.of(), null));
        assertThat(((Claim.Replay) records.begin(scope, "exact-2", fingerprint("{}"))).response())
                .isEqualTo(StoredResponse.of(204, null, List.of(), null));
        assertThatThrownBy(() -> new StoredResponse.Header("X-Bad", "a\r\nInjected: 1"))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("CR, LF");
    }

    @Test
    void responseStoredBeforeExactResponsesStillReplays() throws SQLException {
        RequestHandle handle = claim("legacy-1", "{}");
        try (Connection c = dataSource().getConnection();
                PreparedStatement s = c.prepareStatement("UPDATE leasehold_request SET status = 'SUCCESS',"
                        + " response_code = 200, response_body = ? WHERE id = ?")) {
            s.setString(1, "{\"paid\":35}");
            s.setString(2, handle.id());
            s.executeUpdate();
        }
        assertThat(((Claim.Replay) records.begin(scope, "legacy-1", fingerprint("{}"))).response())
                .isEqualTo(new StoredResponse(200, "{\"paid\":35}"));
    }

    @Test
    void keyRulesAreCheckedInOnePlaceAndNameTheRule() {
        assertThat(records.begin(scope, "k".repeat(IdempotencyKeys.MAX_LENGTH), fingerprint("{}")))
                .isInstanceOf(Claim.Claimed.class);
        Map<String, InvalidIdempotencyKeyException.Rule> bad = Map.of(
                "k".repeat(256),
                InvalidIdempotencyKeyException.Rule.TOO_LONG,
                "line\nbreak",
                InvalidIdempotencyKeyException.Rule.CONTROL_CHARACTER,
                "nul\u0000",
                InvalidIdempotencyKeyException.Rule.CONTROL_CHARACTER,
                "half\uD800",
                InvalidIdempotencyKeyException.Rule.CONTROL_CHARACTER,
                "",
                InvalidIdempotencyKeyException.Rule.MISSING,
                "  ",
                InvalidIdempotencyKeyException.Rule.MISSING);
        bad.forEach((key, rule) -> {
            assertThatThrownBy(() -> records.begin(scope, key, fingerprint("{}")))
                    .isInstanceOfSatisfying(InvalidIdempotencyKeyException.class, e -> assertThat(e.rule())
                            .isEqualTo(rule));
            assertThatThrownBy(() -> IdempotencyKeys.check(key))
                    .isInstanceOf(InvalidIdempotencyKeyException.class)
                    .hasMessageContaining("idempotency key");
        });
        assertThatThrownBy(() -> IdempotencyKeys.check("k".repeat(256))).hasMessageContaining("at most 255");
    }

    @Test
    void keysThatDifferOnlyInTrailingSpacesAreTwoKeys() {
        RequestHandle plain = claim("K1", "{\"amount\":1}");
        records.complete(plain, new StoredResponse(200, "first"));
        assertThat(records.begin(scope, "K1 ", fingerprint("{\"amount\":2}")))
                .as("'K1 ' is another key, not a reuse of 'K1'")
                .isInstanceOf(Claim.Claimed.class);
        assertThat(records.begin(scope, "k1", fingerprint("{\"amount\":3}")))
                .as("case matters")
                .isInstanceOf(Claim.Claimed.class);
        assertThat(records.find(scope, "K1").orElseThrow().response().body()).isEqualTo("first");
    }

    @Test
    void missingTableIsNamedWithItsMigration() throws SQLException {
        String schema = "leasehold_no_tables";
        try (Connection c = dataSource().getConnection();
                Statement s = c.createStatement()) {
            s.execute(
                    database() == Database.MARIADB
                            ? "CREATE DATABASE IF NOT EXISTS " + schema
                            : "CREATE SCHEMA IF NOT EXISTS " + schema);
        }
        TestServices.JdbcEndpoint endpoint = endpoint();
        HikariConfig config = new HikariConfig();
        config.setJdbcUrl(endpoint.url());
        config.setUsername(endpoint.user());
        config.setPassword(endpoint.password());
        config.setMaximumPoolSize(2);
        config.setConnectionInitSql(
                switch (database()) {
                    case POSTGRESQL -> "SET search_path TO " + schema;
                    case MARIADB -> "USE " + schema;
                    case H2 -> "SET SCHEMA " + schema;
                });
        try (HikariDataSource empty = new HikariDataSource(config)) {
            RequestRecords none =
                    RequestRecords.builder(empty).database(database()).build();
            assertThatThrownBy(() -> none.begin(scope, "k", fingerprint("{}")))
                    .isInstanceOfSatisfying(IdempotencySchemaMissingException.class, e -> {
                        assertThat(e.table()).isEqualTo("leasehold_request");
                        assertThat(e.migration()).isEqualTo("V2__leasehold_idempotency.sql");
                    })
                    .hasMessageContaining("table leasehold_request does not exist")
                    .hasMessageContaining("V2__leasehold_idempotency.sql")
                    .hasMessageNotContaining("lease store");
            assertThatThrownBy(() -> none.purgeExpired(10)).isInstanceOf(IdempotencySchemaMissingException.class);
        }
    }

    @Test
    void onlyUniqueViolationsCountAsAConcurrentTwin() throws SQLException {
        String table = "leasehold_test_twins";
        try (Connection c = dataSource().getConnection();
                Statement s = c.createStatement()) {
            s.execute("CREATE TABLE IF NOT EXISTS " + table + " (id VARCHAR(32) NOT NULL PRIMARY KEY,"
                    + " note VARCHAR(10) NOT NULL, amount INT NOT NULL CHECK (amount > 0))");
        }
        String insert = "INSERT INTO " + table + " (id, note, amount) VALUES (?, ?, ?)";
        String id = Jdbc.newId();
        assertThat(Jdbc.insertUnlessDuplicate(dataSource(), "insert", id, insert, id, "a", 1))
                .isTrue();
        assertThat(Jdbc.insertUnlessDuplicate(dataSource(), "insert", id, insert, id, "b", 2))
                .as("a unique violation: a twin won")
                .isFalse();
        String other = Jdbc.newId();
        assertThatThrownBy(() -> Jdbc.insertUnlessDuplicate(dataSource(), "insert", other, insert, other, null, 1))
                .as("NOT NULL is an error, not a twin")
                .isInstanceOf(LeaseStoreException.class);
        assertThatThrownBy(() -> Jdbc.insertUnlessDuplicate(dataSource(), "insert", other, insert, other, "c", -1))
                .as("CHECK is an error, not a twin")
                .isInstanceOf(LeaseStoreException.class);
    }

    @Test
    void fingerprintStoredBeforeVersionsStillMatches() throws SQLException {
        RequestHandle handle = claim("legacy-fp", "{\"amount\":35}");
        records.complete(handle, new StoredResponse(200, "paid"));
        try (Connection c = dataSource().getConnection();
                PreparedStatement s = c.prepareStatement("UPDATE leasehold_request SET fingerprint = ? WHERE id = ?")) {
            s.setString(1, fingerprint("{\"amount\":35}").substring(3)); // as stored before the v1: prefix
            s.setString(2, handle.id());
            s.executeUpdate();
        }
        assertThat(records.begin(scope, "legacy-fp", fingerprint("{\"amount\":35.0}")))
                .isInstanceOf(Claim.Replay.class);
        assertThat(records.begin(scope, "legacy-fp", fingerprint("{\"amount\":36}")))
                .isInstanceOf(Claim.Mismatch.class);
    }

    // ------------------------------------------------------------------ retention and give-back

    @Test
    void giveBackRestoresEveryFieldTheClaimChanged() throws SQLException {
        RequestHandle first = claim("give-1", "{}");
        assertThat(records.fail(first, "card network down")).isTrue();
        Map<String, Object> failed = rawRequest(first.id());
        assertThat(failed.get("expires")).as("an ERROR record expires").isNotNull();

        RequestHandle retry = claim("give-1", "{}");
        assertThat(retry.kind()).isEqualTo(Claim.Kind.RETRY);
        assertThat(records.giveBack(retry, "session busy")).isTrue();
        assertThat(rawRequest(first.id()))
                .as("status, token, fence, heartbeat, error text and expiry as before the claim")
                .isEqualTo(failed);
    }

    @Test
    void purgeRemovesAbandonedProcessingRecordsButNotLiveOrRetainedOnes() throws SQLException {
        RequestRecords purging = RequestRecords.builder(dataSource())
                .database(database())
                .staleAfter(STALE)
                .retention(Duration.ofHours(1))
                .abandonedAfter(Duration.ofHours(1))
                .build();
        RequestHandle crashed = ((Claim.Claimed) purging.begin(scope, "crashed", fingerprint("{}"))).handle();
        RequestHandle live = ((Claim.Claimed) purging.begin(scope, "live", fingerprint("{}"))).handle();
        RequestHandle done = ((Claim.Claimed) purging.begin(scope, "done", fingerprint("{}"))).handle();
        purging.complete(done, new StoredResponse(200, "kept for an hour"));
        RequestHandle effectOfCrashed = crashed;
        effects.runOnce(effectOfCrashed, "create_transaction", "{}", String.class, c -> "tx-1");
        backdateHeartbeat(crashed.id(), Duration.ofHours(2));

        RecordStats stats = purging.stats();
        assertThat(stats.processing()).isGreaterThanOrEqualTo(2);
        assertThat(stats.records()).isGreaterThanOrEqualTo(3);
        assertThat(stats.oldestProcessingAge())
                .hasValueSatisfying(age -> assertThat(age).isGreaterThanOrEqualTo(Duration.ofMinutes(119)));

        assertThat(purging.purgeExpired(10_000)).isGreaterThanOrEqualTo(1);
        assertThat(purging.find(scope, "crashed"))
                .as("abandoned PROCESSING record purged")
                .isEmpty();
        assertThat(effects.completed(crashed.id())).as("with its side effects").isEmpty();
        assertThat(purging.find(scope, "live"))
                .as("a live PROCESSING record stays")
                .isPresent();
        assertThat(purging.heartbeat(live)).isTrue();
        assertThat(purging.find(scope, "done")).as("kept within its retention").isPresent();
    }

    private void backdateHeartbeat(String id, Duration age) throws SQLException {
        try (Connection c = dataSource().getConnection();
                PreparedStatement s = c.prepareStatement(
                        "UPDATE leasehold_request SET updated_at_ms = updated_at_ms - ? WHERE id = ?")) {
            s.setLong(1, age.toMillis());
            s.setString(2, id);
            s.executeUpdate();
        }
    }

    // ------------------------------------------------------------------ side effects

    @Test
    void sideEffectRunsOnceAndSuccessIsReplayed() {
        RequestHandle request = claim("tools-1", "{}");
        AtomicInteger runs = new AtomicInteger();
        EffectResult<String> first = effects.runOnce(
                request,
                "create_transaction",
                "{\"amount\":35,\"type\":\"expense\"}",
                String.class,
                c -> {
                    runs.incrementAndGet();
                    return book(c, request.id(), 35);
                },
                id -> id);
        EffectResult<String> again = effects.runOnce(
                request,
                "create_transaction",
                "{\"type\":\"expense\",\"amount\":35.0}",
                String.class,
                c -> {
                    runs.incrementAndGet();
                    return book(c, request.id(), 35);
                },
                id -> id);
        assertThat(runs.get()).isEqualTo(1);
        assertThat(again.replayed()).isTrue();
        assertThat(again.value()).isEqualTo(first.value());
        assertThat(again.businessId()).isEqualTo(first.value());
        assertThat(ledgerRows(request.id())).isEqualTo(1);

        // Other arguments are another effect: "taxi 30, lunch 20" books both.
        effects.runOnce(request, "create_transaction", "{\"amount\":20}", String.class, c -> book(c, request.id(), 20));
        assertThat(ledgerRows(request.id())).isEqualTo(2);
        assertThat(effects.completed(request.id()))
                .extracting(CompletedEffect::name)
                .containsExactly("create_transaction", "create_transaction");
    }

    @Test
    void failedSideEffectIsRolledBackAndRunAgain() {
        RequestHandle request = claim("tools-2", "{}");
        assertThatThrownBy(() -> effects.runOnce(request, "create_transaction", "{\"amount\":5}", String.class, c -> {
                    book(c, request.id(), 5);
                    throw new java.io.IOException("downstream refused");
                }))
                .isInstanceOf(SideEffectFailedException.class)
                .hasMessageContaining("downstream refused");
        assertThat(ledgerRows(request.id()))
                .as("write rolled back with the failure")
                .isZero();

        EffectResult<String> retried = effects.runOnce(
                request, "create_transaction", "{\"amount\":5}", String.class, c -> book(c, request.id(), 5));
        assertThat(retried.replayed()).isFalse();
        assertThat(ledgerRows(request.id())).isEqualTo(1);
    }

    @Test
    void freshInFlightSideEffectConflictsAndAStaleOneIsTakenOver() throws SQLException {
        RequestHandle request = claim("tools-3", "{}");
        String hash = CanonicalJson.fingerprint("{\"amount\":7}");
        insertProcessingEffect(request.id(), "create_transaction", hash);

        assertThatThrownBy(() -> effects.runOnce(
                        request, "create_transaction", "{\"amount\":7}", String.class, c -> book(c, request.id(), 7)))
                .isInstanceOf(IdempotencyConflictException.class)
                .extracting(e -> ((IdempotencyConflictException) e).reason())
                .isEqualTo(IdempotencyConflictException.Reason.EFFECT_IN_PROGRESS);
        records.heartbeat(request);

        EffectResult<String> taken = await().atMost(Duration.ofSeconds(10))
                .ignoreExceptionsInstanceOf(IdempotencyConflictException.class)
                .until(
                        () -> {
                            records.heartbeat(request);
                            return effects.runOnce(
                                    request,
                                    "create_transaction",
                                    "{\"amount\":7}",
                                    String.class,
                                    c -> book(c, request.id(), 7));
                        },
                        r -> r != null);
        assertThat(taken.replayed()).isFalse();
        assertThat(ledgerRows(request.id())).isEqualTo(1);
    }

    @Test
    void effectOfATakenOverRequestIsNotRun() throws SQLException {
        RequestHandle request = claim("tools-4", "{}");
        forceTakeOver(request);
        AtomicInteger runs = new AtomicInteger();
        assertThatThrownBy(() -> effects.runOnce(request, "create_transaction", "{}", String.class, c -> {
                    runs.incrementAndGet();
                    return book(c, request.id(), 1);
                }))
                .isInstanceOf(IdempotencyConflictException.class)
                .hasMessageContaining("taken over");
        assertThat(runs.get()).isZero();
        assertThat(ledgerRows(request.id())).isZero();
    }

    @Test
    void connectionKilledBetweenTheEffectAndItsMarkLeavesTheEffectExactlyOnceAfterRecovery() throws Exception {
        RequestHandle request = claim("tools-5", "{}");
        assertThatThrownBy(() -> effects.runOnce(request, "create_transaction", "{\"amount\":9}", String.class, c -> {
                    String id = book(c, request.id(), 9);
                    killFromServer(c); // between the effect's write and its SUCCESS mark
                    return id;
                }))
                .isInstanceOfAny(LeaseStoreException.class, SideEffectFailedException.class);
        assertThat(ledgerRows(request.id()))
                .as("the write died with its transaction")
                .isZero();

        // Recovery: the same request runs the same tool call again.
        RequestHandle again = await().atMost(Duration.ofSeconds(10))
                .until(
                        () -> records.begin(scope, "tools-5", fingerprint("{}")) instanceof Claim.Claimed c
                                ? c.handle()
                                : null,
                        h -> h != null);
        EffectResult<String> recovered = await().atMost(Duration.ofSeconds(10))
                .ignoreExceptionsInstanceOf(IdempotencyConflictException.class)
                .until(
                        () -> effects.runOnce(
                                again,
                                "create_transaction",
                                "{\"amount\":9}",
                                String.class,
                                c -> book(c, again.id(), 9)),
                        r -> r != null);
        EffectResult<String> replay = effects.runOnce(
                again, "create_transaction", "{\"amount\":9}", String.class, c -> book(c, again.id(), 9));
        assertThat(replay.replayed()).isTrue();
        assertThat(replay.value()).isEqualTo(recovered.value());
        assertThat(ledgerRows(request.id())).as("exactly once").isEqualTo(1);
    }

    @Test
    void requestWhoseEffectsCompletedButWhoseReplyWasLostIsFinishedWithoutRunningThemAgain() {
        RequestHandle crashed = claim("tools-6", "{\"text\":\"taxi 30\"}");
        effects.runOnce(crashed, "create_transaction", "{\"amount\":30}", String.class, c -> book(c, crashed.id(), 30));
        // ... the process dies here, before the reply is stored.

        RequestHandle recovering = await().atMost(Duration.ofSeconds(10))
                .until(
                        () -> records.begin(scope, "tools-6", fingerprint("{\"text\":\"taxi 30\"}"))
                                        instanceof Claim.Claimed c
                                ? c.handle()
                                : null,
                        h -> h != null);
        assertThat(recovering.kind()).isEqualTo(Claim.Kind.TAKE_OVER);
        List<CompletedEffect> done = effects.completed(recovering.id());
        assertThat(done).hasSize(1);
        EffectResult<String> replay =
                effects.runOnce(recovering, "create_transaction", "{\"amount\":30}", String.class, c -> {
                    throw new AssertionError("must not run again");
                });
        assertThat(replay.replayed()).isTrue();
        records.complete(
                recovering, new StoredResponse(200, "booked " + done.get(0).resultJson()));
        assertThat(ledgerRows(crashed.id())).isEqualTo(1);
        assertThat(records.find(scope, "tools-6").orElseThrow().status()).isEqualTo("SUCCESS");
    }

    @Test
    void badArgumentsAreRejectedBeforeAnythingIsWritten() {
        RequestHandle request = claim("tools-7", "{}");
        assertThatThrownBy(() -> effects.runOnce(request, "create_transaction", "{amount:35}", String.class, c -> "x"))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("JSON");
        assertThatThrownBy(() -> records.begin(scope, " ", fingerprint("{}")))
                .isInstanceOf(InvalidIdempotencyKeyException.class)
                .hasMessageContaining("idempotency key is missing");
        assertThatThrownBy(() -> records.begin(scope, "k", "not-a-hash"))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("fingerprint");
        assertThat(effects.completed(request.id())).isEmpty();
    }

    // ------------------------------------------------------------------ helpers

    static String book(Connection c, String requestId, long amount) throws SQLException {
        String id = "tx-" + UUID.randomUUID();
        try (PreparedStatement s =
                c.prepareStatement("INSERT INTO leasehold_test_ledger (id, request_id, amount) VALUES (?, ?, ?)")) {
            s.setString(1, id);
            s.setString(2, requestId);
            s.setLong(3, amount);
            s.executeUpdate();
        }
        return id;
    }

    private int ledgerRows(String requestId) {
        return ledgerRows(dataSource(), requestId);
    }

    static int ledgerRows(DataSource dataSource, String requestId) {
        try (Connection c = dataSource.getConnection();
                PreparedStatement s =
                        c.prepareStatement("SELECT COUNT(*) FROM leasehold_test_ledger WHERE request_id = ?")) {
            s.setString(1, requestId);
            try (ResultSet rs = s.executeQuery()) {
                rs.next();
                return rs.getInt(1);
            }
        } catch (SQLException e) {
            throw new IllegalStateException(e);
        }
    }

    private void insertProcessingEffect(String requestId, String name, String hash) throws SQLException {
        try (Connection c = dataSource().getConnection();
                PreparedStatement s = c.prepareStatement(Statements.sql(Statements.INSERT_EFFECT, database()))) {
            s.setString(1, Jdbc.newId());
            s.setString(2, requestId);
            s.setString(3, name);
            s.setString(4, hash);
            s.setString(5, requestId + ":" + name + ":" + hash);
            s.setString(6, Jdbc.newId());
            s.executeUpdate();
        }
    }

    private Map<String, Object> rawRequest(String id) throws SQLException {
        try (Connection c = dataSource().getConnection();
                PreparedStatement s = c.prepareStatement(
                        "SELECT status, lease_token, fence, updated_at_ms, error_message, expires_at_ms"
                                + " FROM leasehold_request WHERE id = ?")) {
            s.setString(1, id);
            try (ResultSet rs = s.executeQuery()) {
                assertThat(rs.next()).isTrue();
                Map<String, Object> row = new java.util.HashMap<>();
                row.put("status", rs.getString(1));
                row.put("token", rs.getString(2));
                row.put("fence", rs.getLong(3));
                row.put("updated", rs.getLong(4));
                row.put("error", rs.getString(5));
                row.put("expires", rs.getObject(6) == null ? null : rs.getLong(6));
                return row;
            }
        }
    }
}
