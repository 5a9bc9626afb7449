package dev.leasehold.jdbc;

import dev.leasehold.LeaseInfo;
import dev.leasehold.LeaseStoreException;
import dev.leasehold.LockKey;
import dev.leasehold.spi.AcquireRequest;
import dev.leasehold.spi.AcquireResult;
import dev.leasehold.spi.Grant;
import dev.leasehold.spi.LeaseStore;
import dev.leasehold.spi.OwnerTokens;
import dev.leasehold.spi.ReleaseNotice;
import dev.leasehold.spi.ReleaseSubscription;
import dev.leasehold.spi.Renewal;
import java.net.InetAddress;
import java.net.UnknownHostException;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.SQLFeatureNotSupportedException;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.Optional;
import java.util.concurrent.Executor;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.Consumer;
import javax.sql.DataSource;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A {@link LeaseStore} on a SQL database over plain JDBC: PostgreSQL, MariaDB or H2, one row per
 * key in {@code leasehold_lease} (create it with the bundled Flyway scripts or {@link JdbcSchema}).
 *
 * <p>Every lease operation is ONE atomic statement (an upsert, a conditional update or a select;
 * the SQL of each dialect is in one class with its condition). Expiry is decided by the database
 * clock only, read once per statement (never the transaction's start): the JVM sends durations, the
 * database computes and compares epoch milliseconds, so a JVM whose clock or time zone differs from
 * the database's changes nothing.
 *
 * <p>Fences: every fence handed out is at least the database time in microseconds, and above the
 * row's previous fence ({@code max(fence + 1, now_us)}, in the same statement), so fences strictly
 * increase even when the row comes back older: a restore from a backup, a point-in-time recovery,
 * a promoted replica that missed the last grants, or {@link #deleteExpired housekeeping} deleting
 * the row ({@code LeaseStoreConformance#fencesNeverRepeatAfterARestoreOfOlderState} on H2,
 * PostgreSQL and MariaDB). The limit: the database clock must not go back (across a failover, the
 * new primary's clock must not be behind the old one's by more than the time the failover takes).
 *
 * <p>Owner tokens follow {@link OwnerTokens#check} and are compared exactly, byte for byte (on
 * MariaDB through the NO PAD collation {@code utf8mb4_nopad_bin}, from schema version 1.2): {@code
 * w1} and {@code w1 } are two owners ({@code LeaseStoreConformance#ownersThatDifferOnlyByTrailingSpacesAreTwoOwners}).
 *
 * <p>Transactions: every operation is its own transaction, committed before the method returns,
 * so a grant is never lost with a caller's rollback and a renewal on a scheduler thread is never
 * left uncommitted. A connection handed out with autocommit off is switched to autocommit for the
 * statement and back (PostgreSQL and H2 do that without a round trip); on MariaDB, where the
 * switch costs a round trip, the statement is committed instead, one extra round trip (give the
 * store a pool with autocommit on to avoid it). A connection that is already inside a transaction
 * (a transaction-aware data source used inside a caller's transaction) is refused with an {@link
 * IllegalStateException}: the store would otherwise commit the caller's work. So is an
 * autocommit-off connection whose transaction state the driver cannot report (a wrapper that does
 * not unwrap to the driver's connection, MariaDB Connector/J before 3): the store never guesses
 * (tests {@code AbstractJdbcLeaseStoreTest#aLeaseIsNeverPartOfACallersTransaction} and {@code
 * #aLeaseIsNeverPartOfACallersTransactionWhenTheDriverStateIsHidden}).
 *
 * <p>A statement that fails on a deadlock or serialization conflict (SQLState 40001, MariaDB error
 * 1213) is run again, up to {@value Connections#ATTEMPTS} times, within the same operation.
 *
 * <p>Release notifications: on PostgreSQL, release and force-release notify in the same statement
 * ({@code pg_notify}) and {@link #subscribe} listens on one connection of the pool held for that
 * purpose, so waiters in other processes are woken when the release commits. MariaDB and H2 have
 * no notifications: one thread per store polls the watched keys with one statement every 50 ms at
 * most, sooner when a watched holder's lease runs out (busy results carry the holder's real
 * remaining time). Thread-safe.
 *
 * <p>Every call waits at most the {@link Builder#callTimeout call timeout} (5 s by default) for
 * each answer of the database: it is set as the borrowed connection's network timeout (the
 * driver's socket read timeout on PostgreSQL and MariaDB, no round trip) and the previous one is
 * put back before the connection returns to the pool. A database that stops answering (a
 * partition, a hung server) makes the call fail with a {@link LeaseStoreException} naming the key
 * after about that long, the connection is closed by the driver, and a release or grant whose
 * answer was lost is in doubt: the key frees at its expiry at the latest
 * ({@code JdbcCallTimeoutTest}). Borrowing the connection is bounded by the pool's own connection
 * timeout. Embedded H2 has no network and ignores the setting.
 */
public final class JdbcLeaseStore implements LeaseStore {

    private static final Logger log = LoggerFactory.getLogger(JdbcLeaseStore.class);

    private final DataSource dataSource;
    private final SqlDialect dialect;
    private final JdbcRenewals renewals;
    private final String holder;
    private final boolean notifications;
    private final AtomicBoolean warnedAboutCommits = new AtomicBoolean();
    private final ReentrantLock listenerLock = new ReentrantLock();
    private final Duration pollInterval;
    private final int callTimeoutMillis;
    private final WaiterQueue queue;
    private ReleaseFeed feed; // guarded by listenerLock
    private volatile boolean closed;

    private JdbcLeaseStore(Builder builder) {
        this.dataSource = builder.dataSource;
        this.dialect = builder.database.dialect();
        this.renewals = new JdbcRenewals(builder.database);
        this.holder = builder.holder;
        this.notifications = builder.releaseNotifications;
        this.pollInterval = builder.pollInterval;
        this.callTimeoutMillis = (int) builder.callTimeout.toMillis();
        this.queue = new WaiterQueue(
                builder.fairQueueTtl != null,
                builder.fairQueueTtl != null ? builder.fairQueueTtl : WaiterQueue.DEFAULT_TTL,
                builder.bargingBound,
                builder.pollInterval);
    }

    /** A builder for a store on {@code dataSource}. */
    public static Builder builder(DataSource dataSource) {
        return new Builder(dataSource);
    }

    /** The database this store speaks to. */
    public Database database() {
        return dialect.database();
    }

    /**
     * Asks without saying whether the caller waits: an owner token that asks again after a busy
     * answer is taken for a waiter (the lock service asks with {@link #tryAcquire(AcquireRequest)},
     * which says it).
     */
    @Override
    public AcquireResult tryAcquire(LockKey key, String owner, Duration leaseFor) {
        return acquire(key, owner, leaseFor, null);
    }

    /** Only a waiter takes a place in the key's queue; a single try never does. */
    @Override
    public AcquireResult tryAcquire(AcquireRequest request) {
        return acquire(request.key(), request.owner(), request.leaseFor(), request);
    }

    private AcquireResult acquire(LockKey key, String owner, Duration leaseFor, AcquireRequest request) {
        checkOwner(key, owner);
        long millis = millis(leaseFor);
        AcquireResult result = execute("acquire", key, connection -> {
            try (PreparedStatement statement = connection.prepareStatement(dialect.acquire())) {
                bind(statement, dialect.acquireBinds(), key, owner, millis);
                try (ResultSet row = statement.executeQuery()) {
                    if (!row.next()) {
                        // Created by another caller a moment ago; its expiry is not known yet.
                        return new AcquireResult.Busy(Duration.ZERO);
                    }
                    boolean granted =
                            dialect.acquireReportsGranted() ? row.getBoolean(5) : owner.equals(row.getString(1));
                    if (granted) {
                        return new AcquireResult.Granted(grant(row));
                    }
                    return new AcquireResult.Busy(remaining(row));
                }
            }
        });
        if (result instanceof AcquireResult.Busy busy) {
            return refused(key, owner, busy, request);
        }
        if (queue.granted(owner) && dialect.forget() != null) {
            // The grant ends the caller's place (PostgreSQL's acquire does it in its statement).
            execute("acquire", key, connection -> {
                try (PreparedStatement statement = connection.prepareStatement(dialect.forget())) {
                    bind(statement, "KO", key, owner, 0);
                    return statement.executeUpdate();
                }
            });
        }
        return result;
    }

    /**
     * A refused caller: takes or renews its place in the key's queue when it is due one ({@link
     * WaiterQueue}), and is told when to ask again.
     */
    private AcquireResult refused(LockKey key, String owner, AcquireResult.Busy busy, AcquireRequest request) {
        long now = System.nanoTime();
        long holderNanos = busy.holderRemaining().toNanos();
        WaiterQueue.Plan plan = queue.refused(owner, now, holderNanos, request);
        if (!plan.queued()) {
            return plan.waitNanos() == holderNanos ? busy : new AcquireResult.Busy(Duration.ofNanos(plan.waitNanos()));
        }
        long ahead = execute("queue", key, connection -> {
            if (plan.fresh() && dialect.cleanup() != null) {
                try (PreparedStatement statement = connection.prepareStatement(dialect.cleanup())) {
                    statement.setString(1, key.render());
                    statement.executeUpdate();
                }
            }
            if (plan.join()) {
                try (PreparedStatement statement = connection.prepareStatement(dialect.join())) {
                    bind(statement, "KOTHW", key, owner, 0);
                    statement.executeUpdate();
                }
            }
            if (dialect.position() == null) {
                return -1L;
            }
            try (PreparedStatement statement = connection.prepareStatement(dialect.position())) {
                bind(statement, "KOKO", key, owner, 0);
                try (ResultSet row = statement.executeQuery()) {
                    return row.next() ? row.getLong(1) : 0L;
                }
            }
        });
        return new AcquireResult.Busy(Duration.ofNanos(queue.queuedWait(owner, now, plan, ahead)));
    }

    /** Binds a statement's parameters as its bind string says ({@link SqlDialect}). */
    private void bind(PreparedStatement statement, String binds, LockKey key, String owner, long millis)
            throws SQLException {
        for (int i = 0; i < binds.length(); i++) {
            int index = i + 1;
            switch (binds.charAt(i)) {
                case 'K' -> statement.setString(index, key.render());
                case 'O' -> statement.setString(index, owner);
                case 'M' -> statement.setLong(index, millis);
                case 'H' -> statement.setString(index, holder);
                case 'T' -> statement.setLong(index, queue.ttlMillis);
                case 'W' -> statement.setString(index, queue.wake);
                default -> throw new IllegalStateException("unknown parameter " + binds.charAt(i));
            }
        }
    }

    @Override
    public Optional<Grant> renew(LockKey key, String owner, Duration leaseFor) {
        checkOwner(key, owner);
        long millis = millis(leaseFor);
        return execute("renew", key, connection -> {
            try (PreparedStatement statement = connection.prepareStatement(dialect.renew())) {
                statement.setString(1, key.render());
                statement.setString(2, owner);
                statement.setLong(3, millis);
                try (ResultSet row = statement.executeQuery()) {
                    if (row.next() && owner.equals(row.getString(1))) {
                        return Optional.of(grant(row));
                    }
                    return Optional.empty();
                }
            }
        });
    }

    /** One compare-and-extend statement per lease time among the batch (see {@link JdbcRenewals}). */
    @Override
    public List<Optional<Grant>> renewAll(List<Renewal> batch) {
        batch.forEach(renewal -> checkOwner(renewal.key(), renewal.owner()));
        if (batch.isEmpty()) {
            return List.of();
        }
        return execute(
                "renew",
                batch.size() == 1 ? batch.get(0).key() : null,
                connection -> renewals.renew(connection, batch));
    }

    @Override
    public int renewalBatchLimit() {
        return JdbcRenewals.BATCH_LIMIT;
    }

    @Override
    public boolean release(LockKey key, String owner) {
        checkOwner(key, owner);
        boolean released;
        try {
            released = execute("release", key, connection -> {
                try (PreparedStatement statement = connection.prepareStatement(dialect.release())) {
                    bind(statement, dialect.releaseBinds(), key, owner, 0);
                    return changedOneRow(statement);
                }
            });
        } catch (SchemaMissingException e) {
            return false; // without the table no grant exists; the acquire has said what is missing
        }
        return released;
    }

    /**
     * Drops the place of a waiter whose wait ended without the key, and hands a key that a release
     * gave it meanwhile on to the next live waiter (or frees it), in the same call; for an owner
     * that holds nothing and waits nowhere it changes nothing.
     */
    @Override
    public void leaveQueue(LockKey key, String owner) {
        checkOwner(key, owner);
        queue.forget(owner);
        execute("leave the queue", key, connection -> {
            if (dialect.leave() != null) {
                try (PreparedStatement statement = connection.prepareStatement(dialect.leave())) {
                    bind(statement, "KO", key, owner, 0);
                    statement.execute();
                }
                return null;
            }
            // First the place, so that a release from now on passes this waiter over; then a key
            // that was handed to it before.
            try (PreparedStatement statement = connection.prepareStatement(dialect.forget())) {
                bind(statement, "KO", key, owner, 0);
                statement.executeUpdate();
            }
            try (PreparedStatement statement = connection.prepareStatement(dialect.release())) {
                bind(statement, dialect.releaseBinds(), key, owner, 0);
                statement.executeUpdate();
            }
            return null;
        });
    }

    @Override
    public Optional<LeaseInfo> inspect(LockKey key) {
        Objects.requireNonNull(key, "key is missing (null)");
        return execute("inspect", key, connection -> {
            try (PreparedStatement statement = connection.prepareStatement(dialect.inspect())) {
                statement.setString(1, key.render());
                try (ResultSet row = statement.executeQuery()) {
                    if (!row.next()) {
                        return Optional.empty();
                    }
                    Grant grant = grant(row);
                    return Optional.of(
                            new LeaseInfo(key, row.getString(1), grant.fence(), grant.remaining(), grant.expiresAt()));
                }
            }
        });
    }

    @Override
    public List<LeaseInfo> list(String namespace, int limit) {
        Objects.requireNonNull(namespace, "namespace is missing (null)");
        if (limit < 1 || limit > 10_000) {
            throw new IllegalArgumentException("limit must be between 1 and 10000, was " + limit);
        }
        String pattern = namespace.replace("!", "!!").replace("%", "!%").replace("_", "!_") + ":%";
        return execute("list", null, connection -> {
            try (PreparedStatement statement = connection.prepareStatement(dialect.list())) {
                statement.setString(1, pattern);
                statement.setInt(2, limit);
                List<LeaseInfo> leases = new ArrayList<>();
                try (ResultSet row = statement.executeQuery()) {
                    while (row.next()) {
                        long expiresAt = row.getLong(4);
                        leases.add(new LeaseInfo(
                                LockKey.parse(row.getString(1)),
                                row.getString(2),
                                row.getLong(3),
                                Duration.ofMillis(Math.max(0, expiresAt - row.getLong(5))),
                                Instant.ofEpochMilli(expiresAt)));
                    }
                }
                return leases;
            }
        });
    }

    @Override
    public boolean forceRelease(LockKey key) {
        Objects.requireNonNull(key, "key is missing (null)");
        return execute("force-release", key, connection -> {
            try (PreparedStatement statement = connection.prepareStatement(dialect.forceRelease())) {
                statement.setString(1, key.render());
                return changedOneRow(statement);
            }
        });
    }

    /**
     * Deletes at most {@code limit} rows whose lease expired, or was released, more than {@code
     * retention} ago by the database clock; call it again while it returns {@code limit}. Rows are
     * found through the expiry index; a live lease is never deleted, and on MariaDB no live row is
     * locked (a non-locking read finds the rows, which are then deleted by primary key, each only if
     * still expired). Safe for fences: a deleted key's next row starts above any fence it had.
     * Also deletes at most {@code limit} places of the waiter queue that ended (their waiter stopped
     * asking without leaving), so no place outlives its queue TTL by more than the interval at which
     * this is called.
     *
     * @return how many rows were deleted, leases and places; call it again while that is at least
     *     {@code limit}
     * @throws IllegalArgumentException if retention is under one minute or limit is not 1 to 10000
     */
    public int deleteExpired(Duration retention, int limit) {
        Objects.requireNonNull(retention, "retention is missing (null)");
        if (retention.compareTo(Duration.ofMinutes(1)) < 0) {
            throw new IllegalArgumentException("retention must be at least PT1M, was " + retention);
        }
        if (limit < 1 || limit > 10_000) {
            throw new IllegalArgumentException("limit must be between 1 and 10000, was " + limit);
        }
        return deleteExpiredLeases(retention, limit) + deleteEndedPlaces(limit);
    }

    /** Deletes at most {@code limit} ended places of the waiter queue. */
    private int deleteEndedPlaces(int limit) {
        if (dialect.endedPlaces() == null) {
            return execute("delete ended places", null, connection -> {
                try (PreparedStatement statement = connection.prepareStatement(dialect.deleteEndedPlaces())) {
                    statement.setInt(1, limit);
                    return statement.executeUpdate();
                }
            });
        }
        List<String[]> places = execute("delete ended places", null, connection -> {
            try (PreparedStatement statement = connection.prepareStatement(dialect.endedPlaces())) {
                statement.setInt(1, limit);
                List<String[]> found = new ArrayList<>();
                try (ResultSet row = statement.executeQuery()) {
                    while (row.next()) {
                        found.add(new String[] {row.getString(1), row.getString(2)});
                    }
                }
                return found;
            }
        });
        places.sort(java.util.Comparator.<String[], String>comparing(place -> place[0])
                .thenComparing(place -> place[1]));
        return deleteInBatches("delete ended places", dialect.deleteEndedPlaces(), places, (statement, place) -> {
            statement.setString(1, place[0]);
            statement.setString(2, place[1]);
        });
    }

    @FunctionalInterface
    private interface RowBinder<T> {
        void bind(PreparedStatement statement, T row) throws SQLException;
    }

    /** Runs {@code sql} for each of the rows, in batches of {@value #DELETE_BATCH}: the rows it changed. */
    private <T> int deleteInBatches(String operation, String sql, List<T> rows, RowBinder<T> binder) {
        int deleted = 0;
        for (int from = 0; from < rows.size(); from += DELETE_BATCH) {
            List<T> batch = rows.subList(from, Math.min(rows.size(), from + DELETE_BATCH));
            deleted += execute(operation, null, connection -> {
                try (PreparedStatement statement = connection.prepareStatement(sql)) {
                    for (T row : batch) {
                        binder.bind(statement, row);
                        statement.addBatch();
                    }
                    int count = 0;
                    for (int one : statement.executeBatch()) {
                        count += Math.max(0, one);
                    }
                    return count;
                }
            });
        }
        return deleted;
    }

    private int deleteExpiredLeases(Duration retention, int limit) {
        if (dialect.expiredKeys() == null) {
            return execute("delete expired rows", null, connection -> {
                try (PreparedStatement statement = connection.prepareStatement(dialect.deleteExpired())) {
                    statement.setLong(1, retention.toMillis());
                    statement.setLong(2, retention.toMillis());
                    statement.setInt(3, limit);
                    return statement.executeUpdate();
                }
            });
        }
        // Find the rows with a read that locks nothing, then delete them one by one by primary key,
        // in key order and in batches; each only if still expired, so a row re-acquired in between
        // survives.
        List<String> keys = execute("delete expired rows", null, connection -> {
            try (PreparedStatement statement = connection.prepareStatement(dialect.expiredKeys())) {
                statement.setLong(1, retention.toMillis());
                statement.setInt(2, limit);
                List<String> found = new ArrayList<>();
                try (ResultSet row = statement.executeQuery()) {
                    while (row.next()) {
                        found.add(row.getString(1));
                    }
                }
                return found;
            }
        });
        keys.sort(null);
        return deleteInBatches("delete expired rows", dialect.deleteExpired(), keys, (statement, key) -> {
            statement.setString(1, key);
            statement.setLong(2, retention.toMillis());
        });
    }

    @Override
    public boolean supportsReleaseNotifications() {
        return notifications;
    }

    /**
     * Calls {@code onRelease} when the key is released or force-released by any process. On
     * PostgreSQL when the releasing statement commits (returns once the server confirmed LISTEN); on
     * MariaDB and H2 within one poll of the watched keys (every {@link Builder#releasePollInterval},
     * 50 ms by default, sooner when a watched lease expires first), announcing expiries too.
     */
    @Override
    public ReleaseSubscription subscribe(LockKey key, Consumer<ReleaseNotice> onRelease) {
        Objects.requireNonNull(key, "key is missing (null)");
        Objects.requireNonNull(onRelease, "onRelease is missing (null)");
        return listener(key.render()).subscribe(key.render(), onRelease);
    }

    /** Calls {@code onForceRelease} for every force-release of any key, by any process (polled on MariaDB and H2). */
    @Override
    public ReleaseSubscription subscribeForceReleases(Consumer<ReleaseNotice> onForceRelease) {
        Objects.requireNonNull(onForceRelease, "onForceRelease is missing (null)");
        return listener("(force-releases)").subscribeForceReleases(onForceRelease);
    }

    private ReleaseFeed listener(String what) {
        if (!notifications) {
            throw new UnsupportedOperationException(name() + " does not push release notifications");
        }
        listenerLock.lock();
        try {
            if (closed) {
                throw new IllegalStateException("the lease store is closed; cannot subscribe to " + what);
            }
            if (feed == null) {
                feed = dialect.database() == Database.POSTGRESQL
                        ? new PostgresReleaseListener(dataSource, queue.wake)
                        : new PolledReleaseWatcher(dataSource, dialect, pollInterval);
            }
            return feed;
        } finally {
            listenerLock.unlock();
        }
    }

    /** Stops release notifications and gives their connection back; the data source stays open. */
    @Override
    public void close() {
        ReleaseFeed running;
        listenerLock.lock();
        try {
            closed = true;
            running = feed;
            feed = null;
        } finally {
            listenerLock.unlock();
        }
        if (running != null) {
            running.close();
        }
    }

    @Override
    public String name() {
        return dialect.database().id();
    }

    @FunctionalInterface
    interface SqlCall<T> {
        T run(Connection connection) throws SQLException;
    }

    private <T> T execute(String operation, LockKey key, SqlCall<T> call) {
        String keyText = key == null ? "(all)" : key.render();
        try (Connection connection = dataSource.getConnection()) {
            int previousTimeout = boundAnswers(connection);
            try {
                return executeOn(connection, operation, keyText, call);
            } finally {
                restoreNetworkTimeout(connection, previousTimeout);
            }
        } catch (SQLException e) {
            SchemaMissingException noSchema = JdbcSchema.missing(e, dialect.database());
            throw noSchema != null ? noSchema : new LeaseStoreException(operation, keyText, e);
        }
    }

    /** Runs the drivers' network-timeout tasks on the calling thread (PgJDBC and MariaDB run none). */
    private static final Executor DIRECT = Runnable::run;

    /**
     * Sets the call timeout as the connection's network timeout: the previous one, or -1 when the
     * driver has none (a driver without network timeouts is left as it is).
     */
    private int boundAnswers(Connection connection) throws SQLException {
        int previous;
        try {
            previous = connection.getNetworkTimeout();
        } catch (SQLFeatureNotSupportedException e) {
            return -1;
        }
        connection.setNetworkTimeout(DIRECT, callTimeoutMillis);
        return previous;
    }

    /**
     * Puts the pool's network timeout back; a connection the driver closed after a timeout is not
     * reused, so a failure here changes nothing the caller needs to know.
     */
    private static void restoreNetworkTimeout(Connection connection, int previous) {
        try {
            if (previous >= 0 && !connection.isClosed()) {
                connection.setNetworkTimeout(DIRECT, previous);
            }
        } catch (SQLException e) {
            log.debug("could not restore a connection's network timeout", e);
        }
    }

    private <T> T executeOn(Connection connection, String operation, String keyText, SqlCall<T> call)
            throws SQLException {
        if (connection.getAutoCommit()) {
            return attempts(connection, call, false);
        }
        switch (Connections.transactionState(connection, dialect.database())) {
            case OPEN ->
                throw new IllegalStateException("the lease store was handed a connection inside an open"
                        + " transaction (a transaction-aware data source?) for " + operation + " of " + keyText
                        + ": a lease is never part of a caller's transaction; give the store a plain data source");
            case UNKNOWN ->
                throw new IllegalStateException("the lease store was handed a connection with autocommit off for "
                        + operation + " of " + keyText + " and cannot tell whether a transaction is open on it (a"
                        + " wrapper that does not unwrap to the "
                        + dialect.database().id() + " driver's connection,"
                        + " or an older driver): it refuses rather than commit a caller's work; give the store a"
                        + " data source whose connections have autocommit on");
            case NONE -> {
                // the store's own transaction follows
            }
        }
        if (dialect.autoCommitSwitchIsLocal()) {
            connection.setAutoCommit(true);
            T result;
            try {
                result = attempts(connection, call, false);
            } catch (SQLException | RuntimeException e) {
                restoreManualCommit(connection, e);
                throw e;
            }
            connection.setAutoCommit(false);
            return result;
        }
        if (warnedAboutCommits.compareAndSet(false, true)) {
            log.warn(
                    "the {} pool hands out connections with autocommit off: each lease operation costs an"
                            + " extra COMMIT round trip; give the lease store a pool with autocommit on",
                    name());
        }
        return attempts(connection, call, true);
    }

    /** Runs the call, again after a deadlock or serialization failure; commits each attempt if asked. */
    private <T> T attempts(Connection connection, SqlCall<T> call, boolean commit) throws SQLException {
        for (int attempt = 1; ; attempt++) {
            try {
                T result = call.run(connection);
                if (commit) {
                    connection.commit();
                }
                return result;
            } catch (SQLException e) {
                if (commit) {
                    rollbackQuietly(connection, e);
                }
                boolean again = attempt < Connections.ATTEMPTS
                        && (Connections.isRetryable(e) || (dialect.retriesDuplicateKey() && isDuplicateKey(e)));
                if (!again) {
                    throw e;
                }
                Connections.backOff(attempt);
            } catch (RuntimeException e) {
                if (commit) {
                    rollbackQuietly(connection, e);
                }
                throw e;
            }
        }
    }

    private static void restoreManualCommit(Connection connection, Exception failure) {
        try {
            connection.setAutoCommit(false);
        } catch (SQLException e) {
            failure.addSuppressed(e);
        }
    }

    private static void rollbackQuietly(Connection connection, Exception failure) {
        try {
            connection.rollback();
        } catch (SQLException e) {
            failure.addSuppressed(e);
        }
    }

    /** Whether a release statement changed a row: a returned row on PostgreSQL, an update count elsewhere. */
    private boolean changedOneRow(PreparedStatement statement) throws SQLException {
        if (!dialect.releaseReturnsRows()) {
            return statement.executeUpdate() == 1;
        }
        try (ResultSet row = statement.executeQuery()) {
            return row.next();
        }
    }

    private static Duration remaining(ResultSet row) throws SQLException {
        return Duration.ofMillis(Math.max(0, row.getLong(3) - row.getLong(4)));
    }

    private static Grant grant(ResultSet row) throws SQLException {
        long fence = row.getLong(2);
        long expiresAt = row.getLong(3);
        long now = row.getLong(4);
        return new Grant(fence, Duration.ofMillis(Math.max(0, expiresAt - now)), Instant.ofEpochMilli(expiresAt));
    }

    private static final int DELETE_BATCH = 100;

    private static boolean isDuplicateKey(SQLException e) {
        return "23505".equals(e.getSQLState());
    }

    private static void checkOwner(LockKey key, String owner) {
        Objects.requireNonNull(key, "key is missing (null)");
        OwnerTokens.check(owner);
    }

    private static long millis(Duration leaseFor) {
        Objects.requireNonNull(leaseFor, "leaseFor is missing (null)");
        if (leaseFor.toMillis() < 1) {
            throw new IllegalArgumentException("leaseFor must be at least 1 ms, was " + leaseFor);
        }
        return leaseFor.toMillis();
    }

    /** Builds a {@link JdbcLeaseStore}. Not thread-safe. */
    public static final class Builder {
        private final DataSource dataSource;
        private Database database;
        private String holder;
        private boolean releaseNotifications = true;
        private Duration pollInterval = Duration.ofMillis(50);
        private Duration fairQueueTtl;
        private Duration bargingBound = WaiterQueue.DEFAULT_BARGING_BOUND;
        private Duration callTimeout = Duration.ofSeconds(5);

        private Builder(DataSource dataSource) {
            this.dataSource = Objects.requireNonNull(dataSource, "dataSource is missing (null)");
        }

        /** The database; detected from the data source's metadata when not given. */
        public Builder database(Database database) {
            this.database = Objects.requireNonNull(database, "database is missing (null)");
            return this;
        }

        /**
         * Whether {@link JdbcLeaseStore#subscribe} is offered (default {@code true}): on PostgreSQL
         * it holds one connection of the data source for LISTEN once anyone subscribes; on MariaDB
         * and H2 one thread polls the watched keys. Without it the engine's waiters poll on their own.
         */
        public Builder releaseNotifications(boolean releaseNotifications) {
            this.releaseNotifications = releaseNotifications;
            return this;
        }

        /**
         * How often MariaDB and H2 stores poll the keys that waiters watch (default 50 ms, at most
         * 1 s): the longest a waiter in another process waits after a release.
         */
        public Builder releasePollInterval(Duration interval) {
            Objects.requireNonNull(interval, "interval is missing (null)");
            if (interval.toMillis() < 1 || interval.compareTo(Duration.ofSeconds(1)) > 0) {
                throw new IllegalArgumentException("releasePollInterval must be 1 ms to 1 s, was " + interval);
            }
            this.pollInterval = interval;
            return this;
        }

        /**
         * What the {@code holder} column says about this process (default: host name and process
         * id), for operators; at most 255 characters.
         */
        public Builder holder(String holder) {
            if (holder == null || holder.isBlank() || holder.length() > 255) {
                throw new IllegalArgumentException("holder must be 1 to 255 characters, was " + holder);
            }
            this.holder = holder;
            return this;
        }

        /**
         * Fair mode: waiters of every process queue in the database ({@code leasehold_waiter}, schema
         * version 1.3) per key, in arrival order, and a release hands the key to the first live
         * waiter in the same statement, waking only that waiter's store on PostgreSQL
         * ({@code AbstractJdbcQueueTest#inFairModeTwoServicesAreServedInArrivalOrder}). A caller
         * takes a place on its second ask with the same owner token, so a single try never holds up
         * the queue ({@code #aSingleTryTakesNoPlace}); a place lives {@code queueTtl} after its
         * owner last asked, so a waiter that crashed holds the key up for at most that long
         * ({@code #aCrashedWaiterHoldsTheKeyUpForAtMostItsQueueTtl}). Without it the store still
         * queues callers refused for longer than the {@link #bargingBound}.
         *
         * @param queueTtl 100 ms to 1 h
         */
        public Builder fairQueue(Duration queueTtl) {
            Objects.requireNonNull(queueTtl, "queueTtl is missing (null)");
            if (queueTtl.compareTo(Duration.ofMillis(100)) < 0 || queueTtl.compareTo(Duration.ofHours(1)) > 0) {
                throw new IllegalArgumentException("fairQueue TTL must be between 100 ms and 1 h, was " + queueTtl);
            }
            this.fairQueueTtl = queueTtl;
            return this;
        }

        /**
         * Without fair mode: how long a caller may be refused before it takes a place in the key's
         * waiter queue (default 50 ms, 1 ms to 1 min). Until then it may be overtaken ("barging",
         * which keeps an uncontended or briefly contended key at one statement per acquire); after
         * it, the key is handed to it in queue order, so waiters in other processes never starve
         * ({@code AbstractJdbcQueueTest#everyProcessGetsItsShareOfOneKeyByDefault}). Places of the
         * default mode live 2 s after their owner last asked.
         */
        public Builder bargingBound(Duration bound) {
            Objects.requireNonNull(bound, "bound is missing (null)");
            if (bound.toMillis() < 1 || bound.compareTo(Duration.ofMinutes(1)) > 0) {
                throw new IllegalArgumentException("bargingBound must be 1 ms to 1 min, was " + bound);
            }
            this.bargingBound = bound;
            return this;
        }

        /**
         * The longest a store call waits for an answer of the database (default 5 s, 1 ms to
         * 24 h), enforced by the driver as the connection's network timeout: when it runs out the
         * call fails with a {@link LeaseStoreException} and the driver closes the connection.
         * Keep it above the slowest statement the database may take under load, and well below
         * the lease durations in use.
         */
        public Builder callTimeout(Duration timeout) {
            Objects.requireNonNull(timeout, "timeout is missing (null)");
            if (timeout.toMillis() < 1 || timeout.compareTo(Duration.ofHours(24)) > 0) {
                throw new IllegalArgumentException("callTimeout must be 1 ms to 24 h, was " + timeout);
            }
            this.callTimeout = timeout;
            return this;
        }

        /**
         * The store. On H2 it reads the database's version first and refuses H2 2.x before 2.5,
         * whose concurrent sessions can fail the store's statements (h2database issue 4352),
         * naming the version and the fix: use H2 2.5.252.
         *
         * @throws IllegalStateException on H2 before 2.5
         */
        public JdbcLeaseStore build() {
            if (database == null || database == Database.H2) {
                try (Connection connection = dataSource.getConnection()) {
                    var metaData = connection.getMetaData();
                    if (database == null) {
                        database = Database.of(metaData.getDatabaseProductName());
                    }
                    if (database == Database.H2) {
                        String refusal = H2Versions.refusal(metaData.getDatabaseProductVersion());
                        if (refusal != null) {
                            throw new IllegalStateException(refusal);
                        }
                    }
                } catch (SQLException e) {
                    throw new LeaseStoreException("detect the database", "(none)", e);
                }
            }
            if (holder == null) {
                holder = defaultHolder();
            }
            return new JdbcLeaseStore(this);
        }

        private static String defaultHolder() {
            String host;
            try {
                host = InetAddress.getLocalHost().getHostName();
            } catch (UnknownHostException e) {
                host = "unknown-host";
            }
            String value = host + "/" + ProcessHandle.current().pid();
            return value.length() > 255 ? value.substring(0, 255) : value;
        }
    }
}
