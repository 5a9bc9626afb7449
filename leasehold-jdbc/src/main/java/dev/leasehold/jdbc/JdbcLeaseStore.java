package dev.leasehold.jdbc;

import dev.leasehold.LeaseInfo;
import dev.leasehold.LeaseOptions;
import dev.leasehold.LeaseStoreException;
import dev.leasehold.LockKey;
import dev.leasehold.spi.AcquireResult;
import dev.leasehold.spi.Grant;
import dev.leasehold.spi.LeaseStore;
import java.net.InetAddress;
import java.net.UnknownHostException;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.Optional;
import javax.sql.DataSource;

/**
 * A {@link LeaseStore} on a SQL database over plain JDBC: PostgreSQL, MariaDB or H2, one row per
 * key in {@code leasehold_lease} (create it with the bundled Flyway script or {@link JdbcSchema}).
 *
 * <p>Every operation is ONE atomic statement (an upsert, a conditional update or a select; the SQL
 * of each dialect is in one class with its condition). Expiry is decided by the database clock only:
 * the JVM sends durations, the database computes and compares epoch milliseconds, so a JVM whose
 * clock or time zone differs from the database's changes nothing. Rows are kept on release, so
 * fences keep growing; a new row's fence is seeded with the database time in ms times 1000, so even
 * {@link #deleteExpired housekeeping} never makes a fence go backwards.
 *
 * <p>Transactions: by default each statement commits on its own (autocommit, or an explicit commit
 * if the pool hands out connections with autocommit off). With {@link
 * Builder#joinCallerTransaction(boolean)} the store never commits or rolls back a connection that
 * is in a transaction, so a transaction-aware data source can make a lease part of the caller's
 * transaction (other callers then wait on its row lock until that transaction ends).
 *
 * <p>No release notifications cross processes: the engine wakes waiters of its own releases and
 * polls (bounded, backing off) for others. Thread-safe.
 */
public final class JdbcLeaseStore implements LeaseStore {

    private final DataSource dataSource;
    private final SqlDialect dialect;
    private final boolean joinCallerTransaction;
    private final String holder;

    private JdbcLeaseStore(Builder builder) {
        this.dataSource = builder.dataSource;
        this.dialect = builder.database.dialect();
        this.joinCallerTransaction = builder.joinCallerTransaction;
        this.holder = builder.holder;
    }

    /** A builder for a store on {@code dataSource}. */
    public static Builder builder(DataSource dataSource) {
        return new Builder(dataSource);
    }

    /** The database this store speaks to. */
    public Database database() {
        return dialect.database();
    }

    @Override
    public AcquireResult tryAcquire(LockKey key, String owner, Duration leaseFor) {
        checkOwner(key, owner);
        long millis = millis(leaseFor);
        return execute("acquire", key, connection -> {
            for (int attempt = 1; ; attempt++) {
                try (PreparedStatement statement = connection.prepareStatement(dialect.acquire())) {
                    statement.setString(1, key.render());
                    statement.setString(2, owner);
                    statement.setLong(3, millis);
                    statement.setString(4, holder);
                    try (ResultSet row = statement.executeQuery()) {
                        if (!row.next()) {
                            return busyUnknown();
                        }
                        Grant grant = grant(row);
                        if (owner.equals(row.getString(1))) {
                            return new AcquireResult.Granted(grant);
                        }
                        return new AcquireResult.Busy(grant.remaining());
                    }
                } catch (SQLException e) {
                    if (!(dialect.retriesDuplicateKey() && isDuplicateKey(e) && attempt < 3)) {
                        throw e;
                    }
                }
            }
        });
    }

    private static AcquireResult busyUnknown() {
        // The statement does not say how long the holder keeps the key: report the upper bound.
        return new AcquireResult.Busy(LeaseOptions.MAX_LEASE);
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

    @Override
    public boolean release(LockKey key, String owner) {
        checkOwner(key, owner);
        return execute("release", key, connection -> {
            try (PreparedStatement statement = connection.prepareStatement(dialect.release())) {
                statement.setString(1, key.render());
                statement.setString(2, owner);
                return statement.executeUpdate() == 1;
            }
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
                return statement.executeUpdate() == 1;
            }
        });
    }

    /**
     * Deletes at most {@code limit} rows whose lease ended more than {@code retention} ago, by the
     * database clock; call it again while it returns {@code limit}. Safe for fences: a deleted key's
     * next row starts above any fence it had.
     *
     * @return how many rows were deleted
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
        return execute("delete expired rows", null, connection -> {
            try (PreparedStatement statement = connection.prepareStatement(dialect.deleteExpired())) {
                statement.setLong(1, retention.toMillis());
                statement.setLong(2, retention.toMillis());
                statement.setInt(3, limit);
                return statement.executeUpdate();
            }
        });
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
            if (connection.getAutoCommit() || joinCallerTransaction) {
                return call.run(connection);
            }
            try {
                T result = call.run(connection);
                connection.commit();
                return result;
            } catch (SQLException | RuntimeException e) {
                rollbackQuietly(connection, e);
                throw e;
            }
        } catch (SQLException e) {
            throw new LeaseStoreException(operation, keyText, e);
        }
    }

    private static void rollbackQuietly(Connection connection, Exception failure) {
        try {
            connection.rollback();
        } catch (SQLException e) {
            failure.addSuppressed(e);
        }
    }

    private static Grant grant(ResultSet row) throws SQLException {
        long fence = row.getLong(2);
        long expiresAt = row.getLong(3);
        long now = row.getLong(4);
        return new Grant(fence, Duration.ofMillis(Math.max(0, expiresAt - now)), Instant.ofEpochMilli(expiresAt));
    }

    private static boolean isDuplicateKey(SQLException e) {
        return "23505".equals(e.getSQLState());
    }

    private static void checkOwner(LockKey key, String owner) {
        Objects.requireNonNull(key, "key is missing (null)");
        if (owner == null || owner.isBlank()) {
            throw new IllegalArgumentException("owner token is missing or blank");
        }
        if (owner.length() > 128) {
            throw new IllegalArgumentException("owner token must be at most 128 characters, was " + owner.length());
        }
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
        private boolean joinCallerTransaction;
        private String holder;

        private Builder(DataSource dataSource) {
            this.dataSource = Objects.requireNonNull(dataSource, "dataSource is missing (null)");
        }

        /** The database; detected from the data source's metadata when not given. */
        public Builder database(Database database) {
            this.database = Objects.requireNonNull(database, "database is missing (null)");
            return this;
        }

        /**
         * Whether to leave the commit of a connection that is in a transaction to its owner (default
         * {@code false}: the store commits each statement itself).
         */
        public Builder joinCallerTransaction(boolean joinCallerTransaction) {
            this.joinCallerTransaction = joinCallerTransaction;
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

        /** The store. */
        public JdbcLeaseStore build() {
            if (database == null) {
                database = Database.detect(dataSource);
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
