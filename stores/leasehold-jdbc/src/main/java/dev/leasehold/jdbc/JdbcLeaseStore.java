package dev.leasehold.jdbc;

import dev.leasehold.LeaseInfo;
import dev.leasehold.LeaseStoreException;
import dev.leasehold.LockKey;
import dev.leasehold.jdbc.SqlDialect.Op;
import dev.leasehold.jdbc.support.Databases;
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
import java.time.Duration;
import java.util.List;
import java.util.Objects;
import java.util.Optional;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.Consumer;
import javax.sql.DataSource;

/**
 * A {@link LeaseStore} on a SQL database over plain JDBC: PostgreSQL, MariaDB or H2, one row per
 * key in {@code leasehold_lease} (create it with the bundled Flyway scripts or {@link JdbcSchema}).
 *
 * <p>Every operation is one atomic statement in its own transaction, committed before the method
 * returns, with expiry decided by the database clock. A connection inside a caller's transaction,
 * or whose transaction state the driver cannot report, is refused with an {@link
 * IllegalStateException} (the rule of {@link dev.leasehold.jdbc.support}). Fences strictly increase
 * per key, even after a restore of older rows, as long as the database clock does not go back.
 * Owner tokens are compared byte for byte. Each call waits at most the {@link Builder#callTimeout
 * call timeout} for each answer of the database. Thread-safe. How the statements achieve this is
 * in {@code docs/design/sql.md}; the tests proving each guarantee are listed in {@code
 * docs/guarantees.md}.
 */
public final class JdbcLeaseStore implements LeaseStore {

    private final SqlDialect dialect;
    private final JdbcRenewals renewals;
    private final String holder;
    private final boolean notifications;
    private final ReentrantLock listenerLock = new ReentrantLock();
    private final Duration pollInterval;
    private final StoreCalls calls;
    private final WaiterQueue queue;
    private final LeaseAdmin admin;
    private final Housekeeping housekeeping;
    private final HeldElsewhere heldElsewhere = new HeldElsewhere();
    private ReleaseFeed feed; // guarded by listenerLock
    private volatile boolean closed;

    private JdbcLeaseStore(Builder builder) {
        this.dialect = builder.database.dialect();
        this.renewals = new JdbcRenewals(builder.database);
        this.holder = builder.holder;
        this.notifications = builder.releaseNotifications;
        this.pollInterval = builder.pollInterval;
        this.calls = new StoreCalls(builder.dataSource, dialect, builder.callTimeout);
        this.queue = new WaiterQueue(
                calls,
                holder,
                builder.fairQueueTtl != null,
                builder.fairQueueTtl != null ? builder.fairQueueTtl : WaiterQueue.DEFAULT_TTL,
                builder.bargingBound,
                builder.pollInterval);
        this.admin = new LeaseAdmin(calls);
        this.housekeeping = new Housekeeping(calls);
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
        String rendered = key.render();
        Long leaseMillis = millis(leaseFor);
        if (heldElsewhere.probablyHeld(rendered)) {
            // A plain read refuses as the acquire statement would (held by another owner, unexpired),
            // without locking the row; anything else goes on to the acquire statement.
            AcquireResult.Busy seen =
                    calls.execute("acquire", key, connection -> heldByAnother(connection, rendered, owner));
            if (seen != null) {
                heldElsewhere.held(rendered, seen.holderRemaining());
                return queue.busy(key, owner, seen, request);
            }
            heldElsewhere.free(rendered);
        }
        // An owner that may hold a place of its own acquires through the gate that knows its place;
        // any other by the cheaper statement where the dialect has one.
        Op op = dialect.has(Op.ACQUIRE_UNQUEUED) && !queue.mayHavePlace(rendered, owner)
                ? Op.ACQUIRE_UNQUEUED
                : Op.ACQUIRE;
        AcquireResult result = calls.execute("acquire", key, connection -> {
            try (PreparedStatement statement =
                            calls.prepareInOrder(connection, op, rendered, owner, leaseMillis, holder);
                    ResultSet row = statement.executeQuery()) {
                if (!row.next()) {
                    // Created by another caller a moment ago; its expiry is not known yet.
                    return new AcquireResult.Busy(Duration.ZERO);
                }
                boolean granted = dialect.acquireReportsGranted() ? row.getBoolean(5) : owner.equals(row.getString(1));
                return granted
                        ? new AcquireResult.Granted(StoreCalls.grant(row))
                        : new AcquireResult.Busy(StoreCalls.remaining(row));
            }
        });
        if (result instanceof AcquireResult.Busy busy) {
            heldElsewhere.held(rendered, busy.holderRemaining());
            return queue.busy(key, owner, busy, request);
        }
        heldElsewhere.free(rendered);
        queue.afterGrant(key, owner);
        return result;
    }

    /** The key's unexpired lease if another owner holds it, read without locking; null otherwise. */
    private AcquireResult.Busy heldByAnother(Connection connection, String key, String owner) throws SQLException {
        try (PreparedStatement statement = calls.prepareInOrder(connection, Op.INSPECT, key);
                ResultSet row = statement.executeQuery()) {
            String holderToken = row.next() ? row.getString(1) : null;
            if (holderToken == null || owner.equals(holderToken)) {
                return null;
            }
            return new AcquireResult.Busy(StoreCalls.remaining(row));
        }
    }

    @Override
    public Optional<Grant> renew(LockKey key, String owner, Duration leaseFor) {
        checkOwner(key, owner);
        Long leaseMillis = millis(leaseFor);
        return calls.execute("renew", key, connection -> {
            try (PreparedStatement statement =
                            calls.prepareInOrder(connection, Op.RENEW, key.render(), owner, leaseMillis);
                    ResultSet row = statement.executeQuery()) {
                return row.next() && owner.equals(row.getString(1))
                        ? Optional.of(StoreCalls.grant(row))
                        : Optional.<Grant>empty();
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
        return calls.execute(
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
        try {
            return calls.execute("release", key, connection -> {
                String rendered = key.render();
                // An owner that may hold a place of its own (a waiter handed the key, not yet asking
                // again) ends it with its release; any other releases by the cheaper statement where
                // the dialect has one.
                boolean placed = queue.mayHavePlace(rendered, owner);
                if (placed && !dialect.releaseEndsOwnPlace()) {
                    calls.update(connection, Op.FORGET, StoreCalls.keyAndOwner(key, owner));
                }
                Op op = !placed && dialect.has(Op.RELEASE_UNQUEUED) ? Op.RELEASE_UNQUEUED : Op.RELEASE;
                try (PreparedStatement statement = calls.prepareInOrder(connection, op, rendered, owner)) {
                    boolean released = calls.changedOneRow(statement);
                    if (released) {
                        heldElsewhere.free(rendered);
                    }
                    if (placed && (released || !dialect.releaseEndsOwnPlace())) {
                        queue.placeEnded(rendered, owner);
                    }
                    return released;
                }
            });
        } catch (SchemaMissingException e) {
            return false; // without the table no grant exists; the acquire has said what is missing
        }
    }

    /**
     * Drops the place of a waiter whose wait ended without the key, and hands a key that a release
     * gave it meanwhile on to the next live waiter (or frees it), in the same call; for an owner
     * that holds nothing and waits nowhere it changes nothing.
     */
    @Override
    public void leaveQueue(LockKey key, String owner) {
        checkOwner(key, owner);
        queue.leave(key, owner);
    }

    @Override
    public Optional<LeaseInfo> inspect(LockKey key) {
        Objects.requireNonNull(key, "key is missing (null)");
        return admin.inspect(key);
    }

    @Override
    public List<LeaseInfo> list(String namespace, int limit) {
        Objects.requireNonNull(namespace, "namespace is missing (null)");
        if (limit < 1 || limit > 10_000) {
            throw new IllegalArgumentException("limit must be between 1 and 10000, was " + limit);
        }
        return admin.list(namespace, limit);
    }

    @Override
    public boolean forceRelease(LockKey key) {
        Objects.requireNonNull(key, "key is missing (null)");
        return admin.forceRelease(key);
    }

    /**
     * Deletes at most {@code limit} rows whose lease expired, or was released, more than {@code
     * retention} ago by the database clock, and at most {@code limit} places of the waiter queue
     * that ended; a live lease is never deleted, and a deleted key's next row starts above any fence
     * it had. Call it again while it returns at least {@code limit}; a place then outlives its
     * queue TTL by at most the interval of these calls.
     *
     * @return how many rows were deleted, leases and places
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
        return housekeeping.deleteExpired(retention, limit);
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
                        ? new PostgresReleaseListener(calls, queue.wake)
                        : new PolledReleaseWatcher(calls.dataSource, dialect, pollInterval);
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
         * waiter in the same statement. A caller takes a place on its second ask with the same owner
         * token, so a single try never holds up the queue; a place lives {@code queueTtl} after its
         * owner last asked, so a waiter that crashed holds the key up for at most that long. Without
         * it the store still queues callers refused for longer than the {@link #bargingBound}.
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
         * it, the key is handed to it in queue order, so waiters in other processes never starve.
         * Places of the default mode live 2 s after their owner last asked.
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
                        database = Databases.of(metaData.getDatabaseProductName());
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
