package dev.leasehold.spring.retry;

import dev.leasehold.jdbc.Database;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Objects;
import java.util.UUID;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import javax.sql.DataSource;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A {@link RetryQueue} in the SQL database, table {@code leasehold_retry} (Leasehold's migration 3):
 * one row per task, its due time by the database clock. Several instances may share the
 * table: a due row is claimed by a compare-and-set from PENDING to RUNNING with a claim token of its
 * own, so one instance handles it. While its handler runs, the claim is renewed every third of the
 * claim timeout, so a retry that runs longer than the timeout keeps its row; a row whose claim was
 * not renewed for the claim timeout (its instance died) is made PENDING again, its claim token
 * dropped. A row is claimed only while it is due, so one put back with a backoff by another instance
 * waits for it. Only the claim's own instance renews, reschedules, parks or settles a RUNNING row, so
 * a delivery that lost its claim cannot remove or revive another instance's (nor store again a task
 * another delivery completed). Enqueueing a key that is already waiting or running
 * elsewhere adds nothing (the key is the primary key).
 *
 * <p>Polls only after {@link #start}, which Leasehold calls only when some bean has a {@code
 * RETRY_LATER} method or {@code leasehold.retry.enabled=true}: one SELECT per poll interval.
 * Thread-safe.
 */
public final class JdbcRetryQueue implements RetryQueue {

    private static final Logger log = LoggerFactory.getLogger(JdbcRetryQueue.class);

    private final DataSource dataSource;
    private final String now;
    private final Duration pollInterval;
    private final Duration claimTimeout;
    private final Duration redeliveryDelay;
    private volatile ScheduledExecutorService poller;
    private volatile ScheduledExecutorService renewals;
    /** The claim whose handler runs on this thread (the poller's), if any. */
    private final ThreadLocal<Claim> handling = new ThreadLocal<>();

    private volatile boolean failing;

    /**
     * A queue in {@code dataSource}.
     *
     * @param pollInterval how often due rows are looked for
     * @param claimTimeout after how long without a renewal a RUNNING row counts as abandoned
     * @param redeliveryDelay when a delivery whose handler threw is tried again
     */
    public JdbcRetryQueue(
            DataSource dataSource,
            Database database,
            Duration pollInterval,
            Duration claimTimeout,
            Duration redeliveryDelay) {
        this.dataSource = Objects.requireNonNull(dataSource, "dataSource");
        this.now = database.nowMillisSql();
        this.pollInterval = positive("pollInterval", pollInterval);
        this.claimTimeout = positive("claimTimeout", claimTimeout);
        this.redeliveryDelay = positive("redeliveryDelay", redeliveryDelay);
    }

    private static Duration positive(String name, Duration value) {
        if (value == null || value.isNegative() || value.isZero()) {
            throw new IllegalArgumentException(name + " must be > 0, was " + value);
        }
        return value;
    }

    @Override
    public String name() {
        return "jdbc";
    }

    @Override
    public boolean enqueue(RetryTask task, Duration delay) {
        long delayMs = Math.max(0, delay.toMillis());
        try (Connection c = dataSource.getConnection()) {
            c.setAutoCommit(true);
            // The key this thread's handler runs is rescheduled: its handler found it busy again.
            Claim own = ownClaim(task.key());
            if (own != null) {
                try (PreparedStatement s = c.prepareStatement("UPDATE leasehold_retry SET status = 'PENDING',"
                        + " attempts = ?, due_at_ms = " + now + " + ?, claimed_at_ms = NULL, claim_token = NULL"
                        + " WHERE id = ? AND status = 'RUNNING' AND claim_token = ?")) {
                    s.setInt(1, task.attempt());
                    s.setLong(2, delayMs);
                    s.setString(3, task.key());
                    s.setString(4, own.token());
                    if (s.executeUpdate() == 1) {
                        return true;
                    }
                }
            }
            try (PreparedStatement s = c.prepareStatement("INSERT INTO leasehold_retry (id, bean_name, method_name,"
                    + " parameter_types, arguments_json, lock_key, attempts, status, due_at_ms, created_at_ms)"
                    + " VALUES (?, ?, ?, ?, ?, ?, ?, 'PENDING', " + now + " + ?, " + now + ")")) {
                s.setString(1, task.key());
                s.setString(2, task.bean());
                s.setString(3, task.method());
                s.setString(4, String.join(",", task.parameterTypes()));
                s.setString(5, task.arguments());
                s.setString(6, task.lockKey());
                s.setInt(7, task.attempt());
                s.setLong(8, delayMs);
                s.executeUpdate();
                return true;
            } catch (SQLException e) {
                if (isDuplicate(e)) {
                    return false; // already waiting under this key
                }
                throw e;
            }
        } catch (SQLException e) {
            throw new IllegalStateException(
                    "could not store the retry of " + task.bean() + "." + task.method() + " for lock " + task.lockKey(),
                    e);
        }
    }

    private static boolean isDuplicate(SQLException e) {
        return e.getSQLState() != null && e.getSQLState().startsWith("23");
    }

    private Claim ownClaim(String id) {
        Claim claim = handling.get();
        return claim != null && claim.id().equals(id) ? claim : null;
    }

    @Override
    public void park(RetryTask task, String error) {
        String text = error.length() > 1000 ? error.substring(0, 1000) : error;
        Claim own = ownClaim(task.key());
        try (Connection c = dataSource.getConnection()) {
            c.setAutoCommit(true);
            try (PreparedStatement s = c.prepareStatement("UPDATE leasehold_retry SET status = 'FAILED',"
                    + " attempts = ?, last_error = ?, claim_token = NULL WHERE id = ?"
                    + (own != null ? " AND status = 'RUNNING' AND claim_token = ?" : ""))) {
                s.setInt(1, task.attempt());
                s.setString(2, text);
                s.setString(3, task.key());
                if (own != null) {
                    s.setString(4, own.token());
                }
                if (s.executeUpdate() == 1) {
                    return;
                }
            }
            if (own != null) {
                // Claimed by another delivery meanwhile: that one settles the row. A row that is gone
                // was run to completion by it, so nothing is stored again.
                log.warn(
                        exists(c, task.key())
                                ? "delayed retry {} was claimed by another delivery; not parked here"
                                : "delayed retry {} was completed by another delivery; not parked here",
                        task.key());
                return;
            }
            if (enqueue(task, Duration.ZERO)) {
                park(task, error);
            }
        } catch (SQLException e) {
            throw new IllegalStateException("could not park the retry " + task.key(), e);
        }
    }

    @Override
    public synchronized void start(RetryHandler handler) {
        if (poller != null) {
            return;
        }
        checkTable();
        ScheduledExecutorService executor = Executors.newSingleThreadScheduledExecutor(r -> {
            Thread thread = new Thread(r, "leasehold-retry");
            thread.setDaemon(true);
            return thread;
        });
        long period = pollInterval.toMillis();
        executor.scheduleWithFixedDelay(() -> poll(handler), period, period, TimeUnit.MILLISECONDS);
        poller = executor;
    }

    private synchronized ScheduledExecutorService renewals() {
        if (renewals == null) {
            renewals = Executors.newSingleThreadScheduledExecutor(r -> {
                Thread thread = new Thread(r, "leasehold-retry-renewal");
                thread.setDaemon(true);
                return thread;
            });
        }
        return renewals;
    }

    private static boolean exists(Connection c, String id) throws SQLException {
        try (PreparedStatement s = c.prepareStatement("SELECT 1 FROM leasehold_retry WHERE id = ?")) {
            s.setString(1, id);
            try (ResultSet rs = s.executeQuery()) {
                return rs.next();
            }
        }
    }

    private void checkTable() {
        try (Connection c = dataSource.getConnection();
                PreparedStatement s = c.prepareStatement("SELECT COUNT(claim_token) FROM leasehold_retry WHERE 1 = 0");
                ResultSet rs = s.executeQuery()) {
            rs.next();
        } catch (SQLException e) {
            throw new IllegalStateException(
                    "delayed retries need the table leasehold_retry, which is missing or unreadable ("
                            + e.getMessage() + "); let Leasehold create it (Flyway on the class path, or"
                            + " leasehold.jdbc.initialize-schema=always) or run db/leasehold/<vendor>/V3__leasehold_retry.sql"
                            + " and V3_1__leasehold_retry_claim_token.sql",
                    e);
        }
    }

    @Override
    public synchronized void stop() {
        if (poller != null) {
            poller.shutdownNow();
            poller = null;
        }
        if (renewals != null) {
            renewals.shutdownNow();
            renewals = null;
        }
    }

    /** Whether the poller runs. */
    public boolean isStarted() {
        return poller != null;
    }

    /** Runs the due tasks once; returns how many were handled. */
    public int poll(RetryHandler handler) {
        List<String> due = new ArrayList<>();
        try (Connection c = dataSource.getConnection()) {
            c.setAutoCommit(true);
            try (PreparedStatement reset = c.prepareStatement("UPDATE leasehold_retry SET status = 'PENDING',"
                    + " claimed_at_ms = NULL, claim_token = NULL"
                    + " WHERE status = 'RUNNING' AND claimed_at_ms < " + now + " - ?")) {
                reset.setLong(1, claimTimeout.toMillis());
                reset.executeUpdate();
            }
            try (PreparedStatement s = c.prepareStatement("SELECT id FROM leasehold_retry WHERE status = 'PENDING'"
                            + " AND due_at_ms <= " + now + " ORDER BY due_at_ms LIMIT 20");
                    ResultSet rs = s.executeQuery()) {
                while (rs.next()) {
                    due.add(rs.getString(1));
                }
            }
            if (failing) {
                failing = false;
                log.info("delayed retries: the database answers again");
            }
        } catch (SQLException | RuntimeException e) {
            if (!failing) {
                failing = true; // one line per outage, not one per poll
                log.warn("delayed retries: cannot read leasehold_retry, will keep trying: {}", e.toString());
            }
            return 0;
        }
        int handled = 0;
        for (String id : due) {
            Claim claim = new Claim(id, UUID.randomUUID().toString());
            RetryTask task = claim(claim);
            if (task == null) {
                continue; // another instance claimed it
            }
            handled++;
            handling.set(claim);
            ScheduledFuture<?> renewal = renewWhileHandled(claim);
            try {
                handler.handle(task);
                renewal.cancel(false);
                settle("DELETE FROM leasehold_retry WHERE id = ? AND status = 'RUNNING' AND claim_token = ?", claim, 0);
            } catch (Exception e) {
                renewal.cancel(false);
                log.warn(
                        "delayed retry {} of {}.{} not settled, delivered again later: {}",
                        id,
                        task.bean(),
                        task.method(),
                        e.toString());
                settle(
                        "UPDATE leasehold_retry SET status = 'PENDING', claimed_at_ms = NULL, claim_token = NULL,"
                                + " due_at_ms = " + now
                                + " + ? WHERE id = ? AND status = 'RUNNING' AND claim_token = ?",
                        claim,
                        redeliveryDelay.toMillis());
            } finally {
                renewal.cancel(false);
                handling.remove();
            }
        }
        return handled;
    }

    /** The claim of one delivery: the row and the token only this delivery knows. */
    private record Claim(String id, String token) {}

    /**
     * Renews the claim every third of the claim timeout while its handler runs (the renewals have a
     * thread of their own, so a long handler never delays them); stops once the row is no longer
     * this claim's.
     */
    private ScheduledFuture<?> renewWhileHandled(Claim claim) {
        long period = Math.max(20, claimTimeout.toMillis() / 3);
        ScheduledExecutorService executor = renewals();
        AtomicReference<ScheduledFuture<?>> self = new AtomicReference<>();
        ScheduledFuture<?> future = executor.scheduleWithFixedDelay(
                () -> {
                    if (!renew(claim)) {
                        ScheduledFuture<?> mine = self.get();
                        if (mine != null) {
                            mine.cancel(false);
                        }
                    }
                },
                period,
                period,
                TimeUnit.MILLISECONDS);
        self.set(future);
        return future;
    }

    /** Whether the row is still this claim's (a failed renewal counts as still: it is tried again). */
    private boolean renew(Claim claim) {
        try (Connection c = dataSource.getConnection();
                PreparedStatement s = c.prepareStatement("UPDATE leasehold_retry SET claimed_at_ms = " + now
                        + " WHERE id = ? AND status = 'RUNNING' AND claim_token = ?")) {
            c.setAutoCommit(true);
            s.setString(1, claim.id());
            s.setString(2, claim.token());
            if (s.executeUpdate() == 1) {
                return true;
            }
            log.debug("delayed retry {} is no longer this delivery's claim; renewals stop", claim.id());
            return false;
        } catch (SQLException | RuntimeException e) {
            log.warn(
                    "claim of delayed retry {} could not be renewed (it is abandoned after {} without a renewal): {}",
                    claim.id(),
                    claimTimeout,
                    e.toString());
            return true;
        }
    }

    private RetryTask claim(Claim claim) {
        String id = claim.id();
        try (Connection c = dataSource.getConnection()) {
            c.setAutoCommit(true);
            try (PreparedStatement s = c.prepareStatement("UPDATE leasehold_retry SET status = 'RUNNING',"
                    + " claimed_at_ms = " + now + ", claim_token = ? WHERE id = ? AND status = 'PENDING'"
                    + " AND due_at_ms <= " + now)) {
                s.setString(1, claim.token());
                s.setString(2, id);
                if (s.executeUpdate() != 1) {
                    return null;
                }
            }
            try (PreparedStatement s = c.prepareStatement("SELECT bean_name, method_name, parameter_types,"
                    + " arguments_json, lock_key, attempts FROM leasehold_retry WHERE id = ?")) {
                s.setString(1, id);
                try (ResultSet rs = s.executeQuery()) {
                    if (!rs.next()) {
                        return null;
                    }
                    String types = rs.getString(3);
                    return new RetryTask(
                            id,
                            rs.getString(1),
                            rs.getString(2),
                            types.isEmpty() ? List.of() : Arrays.asList(types.split(",")),
                            rs.getString(4),
                            rs.getString(5),
                            rs.getInt(6));
                }
            }
        } catch (SQLException e) {
            log.warn("delayed retry {} could not be claimed: {}", id, e.toString());
            return null;
        }
    }

    private void settle(String sql, Claim claim, long delayMs) {
        String id = claim.id();
        try (Connection c = dataSource.getConnection();
                PreparedStatement s = c.prepareStatement(sql)) {
            c.setAutoCommit(true);
            int i = 1;
            if (delayMs > 0) {
                s.setLong(i++, delayMs);
            }
            s.setString(i++, id);
            s.setString(i, claim.token());
            s.executeUpdate();
        } catch (SQLException e) {
            // The row stays RUNNING and is made PENDING again after the claim timeout: delivered again.
            log.warn(
                    "delayed retry {} could not be settled, it is delivered again after the claim timeout: {}",
                    id,
                    e.toString());
        }
    }
}
