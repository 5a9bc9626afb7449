package dev.leasehold.jdbc.support;

import dev.leasehold.jdbc.Database;
import java.sql.Connection;
import java.sql.SQLException;
import java.sql.SQLFeatureNotSupportedException;
import java.time.Duration;
import java.util.Objects;
import java.util.concurrent.Executor;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.Predicate;
import javax.sql.DataSource;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Runs work on a connection borrowed from a data source as its own transaction, committed before
 * the call returns, under the rule of this package: a connection with autocommit off is used only
 * when its driver says no transaction is open on it, and is refused with an {@link
 * IllegalStateException} otherwise, including when the driver cannot tell. Work that fails on a
 * deadlock or serialization conflict may be run again. Thread-safe.
 */
public final class OwnTransactions {

    private static final Logger log = LoggerFactory.getLogger(OwnTransactions.class);

    /** Runs the drivers' network-timeout tasks on the calling thread (PgJDBC and MariaDB run none). */
    private static final Executor DIRECT = Runnable::run;

    private final String user;
    private final String rule;
    private final Database database;
    private final int callTimeoutMillis;
    private final int attempts;
    private final Predicate<SQLException> alsoRetryable;
    private final AtomicBoolean warnedAboutCommits = new AtomicBoolean();

    private OwnTransactions(Builder builder) {
        this.user = builder.user;
        this.rule = builder.rule;
        this.database = builder.database;
        this.callTimeoutMillis = builder.callTimeoutMillis;
        this.attempts = builder.attempts;
        this.alsoRetryable = builder.alsoRetryable;
    }

    /**
     * A builder; {@code user} and {@code rule} name the caller and its reason in refusals, as in
     * "the lease store was handed ...: a lease is never part of a caller's transaction".
     */
    public static Builder builder(String user, String rule) {
        return new Builder(user, rule);
    }

    /**
     * Borrows a connection, runs {@code call} on it as its own transaction and gives the connection
     * back. A connection with autocommit on runs the call as it is; one with autocommit off and no
     * open transaction is switched to autocommit for the call where the driver does that without a
     * round trip (PostgreSQL, H2), and is otherwise committed after it (MariaDB, one extra round
     * trip, logged once).
     *
     * @param operation what the call does, for refusals
     * @param subject what it does it to, for refusals
     * @throws IllegalStateException if the connection is inside a transaction, or its driver cannot
     *     tell whether it is
     */
    public <T> T run(DataSource dataSource, String operation, String subject, SqlCall<T> call) throws SQLException {
        try (Connection connection = dataSource.getConnection()) {
            int previousTimeout = boundAnswers(connection);
            try {
                return runOn(connection, operation, subject, call);
            } finally {
                restoreNetworkTimeout(connection, previousTimeout);
            }
        }
    }

    /**
     * Sets the call timeout as the connection's network timeout: the previous one, or -1 when none
     * is set or the driver has none.
     */
    private int boundAnswers(Connection connection) throws SQLException {
        if (callTimeoutMillis <= 0) {
            return -1;
        }
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

    /**
     * Refuses a connection that work of its own may not use: one with autocommit off whose driver
     * says a transaction is open on it, or cannot tell. For callers that borrow the connection
     * themselves and manage their own transaction on it.
     *
     * @return the connection's database
     * @throws IllegalStateException if the connection is inside a transaction, or its driver cannot
     *     tell whether it is
     */
    public Database checkOwnable(Connection connection, String operation, String subject) throws SQLException {
        Database db = database != null ? database : Databases.of(connection);
        if (connection.getAutoCommit()) {
            return db;
        }
        switch (TransactionState.of(connection, db)) {
            case OPEN ->
                throw new IllegalStateException(user + " was handed a connection inside an open transaction (a"
                        + " transaction-aware data source?) for " + operation + " of " + subject + ": " + rule
                        + "; give it a plain data source");
            case UNKNOWN ->
                throw new IllegalStateException(user + " was handed a connection with autocommit off for "
                        + operation + " of " + subject + " and cannot tell whether a transaction is open on it (a"
                        + " wrapper that does not unwrap to the " + db.id() + " driver's connection, or an older"
                        + " driver): it refuses rather than commit a caller's work; give it a data source whose"
                        + " connections have autocommit on");
            case NONE -> {
                // free for work of its own
            }
        }
        return db;
    }

    private <T> T runOn(Connection connection, String operation, String subject, SqlCall<T> call) throws SQLException {
        if (connection.getAutoCommit()) {
            return attempts(connection, call, false);
        }
        Database db = checkOwnable(connection, operation, subject);
        if (Databases.autoCommitSwitchIsLocal(db)) {
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
                    "{} is handed connections with autocommit off by its {} pool: each call costs an extra"
                            + " COMMIT round trip; give it a pool with autocommit on",
                    user,
                    db.id());
        }
        return attempts(connection, call, true);
    }

    /** Runs the call, again after a conflict while attempts remain; commits each attempt if asked. */
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
                if (attempt >= attempts || !(isConflict(e) || alsoRetryable.test(e))) {
                    throw e;
                }
                backOff(attempt);
            } catch (RuntimeException e) {
                if (commit) {
                    rollbackQuietly(connection, e);
                }
                throw e;
            }
        }
    }

    /**
     * Whether the failure rolled back only this statement's transaction because of a conflict with
     * another (deadlock, serialization failure), so the same statement may simply run again.
     */
    public static boolean isConflict(SQLException e) {
        for (Throwable cause = e; cause != null; cause = cause.getCause()) {
            if (cause instanceof SQLException sql) {
                String state = sql.getSQLState();
                if ("40001".equals(state) || "40P01".equals(state) || sql.getErrorCode() == 1213) {
                    return true;
                }
            }
        }
        return false;
    }

    /** A short randomised pause before attempt {@code attempt + 1}, so colliding callers spread out. */
    private static void backOff(int attempt) throws SQLException {
        try {
            Thread.sleep(ThreadLocalRandom.current().nextInt(1, 1 + (2 << attempt)));
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new SQLException("interrupted while retrying after a deadlock", "40001", e);
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

    /** Builds {@link OwnTransactions}. Not thread-safe. */
    public static final class Builder {
        private final String user;
        private final String rule;
        private Database database;
        private int callTimeoutMillis;
        private int attempts = 1;
        private Predicate<SQLException> alsoRetryable = e -> false;

        private Builder(String user, String rule) {
            this.user = Objects.requireNonNull(user, "user is missing (null)");
            this.rule = Objects.requireNonNull(rule, "rule is missing (null)");
        }

        /** The database of every connection; without it, read from a connection's metadata when needed. */
        public Builder database(Database database) {
            this.database = Objects.requireNonNull(database, "database is missing (null)");
            return this;
        }

        /**
         * The longest wait for each answer of the database, set as the borrowed connection's network
         * timeout and put back before the connection is returned (default: the connection's own).
         */
        public Builder callTimeout(Duration timeout) {
            this.callTimeoutMillis = (int) Math.min(Integer.MAX_VALUE, timeout.toMillis());
            return this;
        }

        /**
         * Runs the call up to {@code attempts} times (default 1) when it fails on a deadlock or a
         * serialization conflict, or on what {@code alsoRetryable} accepts.
         */
        public Builder attempts(int attempts, Predicate<SQLException> alsoRetryable) {
            if (attempts < 1) {
                throw new IllegalArgumentException("attempts must be at least 1, was " + attempts);
            }
            this.attempts = attempts;
            this.alsoRetryable = Objects.requireNonNull(alsoRetryable, "alsoRetryable is missing (null)");
            return this;
        }

        /** The runner. */
        public OwnTransactions build() {
            return new OwnTransactions(this);
        }
    }
}
