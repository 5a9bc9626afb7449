package dev.leasehold.jdbc;

import dev.leasehold.jdbc.support.SqlStatement;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.util.EnumMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;

/**
 * The SQL of every lease operation for one database, each statement declared for a named {@link
 * Op} with named parameters. What each statement does and returns is on its {@link Op}; the
 * statements themselves, and why they are written as they are, are in the dialect classes and in
 * {@code docs/design/sql.md}.
 */
final class SqlDialect {

    /** The operations, each with the parameters its statement may use. */
    enum Op {
        /**
         * Grants the key, or reports its holder: returns (owner_token, fence, expires_at_ms,
         * now_ms[, granted]); no row means busy with the holder unknown.
         */
        ACQUIRE(true, "key", "owner", "lease_ms", "holder"),
        /**
         * As ACQUIRE, for an owner this store knows holds no place in the key's queue (absent:
         * ACQUIRE does it).
         */
        ACQUIRE_UNQUEUED(false, "key", "owner", "lease_ms", "holder"),
        /** Extends the caller's unexpired lease: returns (owner_token, fence, expires_at_ms, now_ms). */
        RENEW(true, "key", "owner", "lease_ms"),
        /** Ends the caller's lease, handing the key to the first live waiter: rows or an update count. */
        RELEASE(true, "key", "owner"),
        /**
         * Ends the lease of an owner this store knows holds no place in the key's queue, handing
         * the key on as RELEASE does (absent: RELEASE does it).
         */
        RELEASE_UNQUEUED(false, "key", "owner"),
        /** Frees an unexpired lease whoever holds it: rows or an update count. */
        FORCE_RELEASE(true, "key"),
        /** The unexpired lease: (owner_token, fence, expires_at_ms, now_ms), no row if free. */
        INSPECT(true, "key"),
        /** Unexpired leases whose keys match a LIKE pattern ({@code !} escapes), in key order. */
        LIST(true, "pattern", "limit"),
        /** Keys expired longer than the retention, read without locking (absent: one DELETE does it). */
        EXPIRED_KEYS(false, "retention_ms", "limit"),
        /** Deletes expired rows: up to a limit, or one listed key still expired. */
        DELETE_EXPIRED(true, "key", "retention_ms", "limit"),
        /** Raises a resource's fence if the given one is higher: returns (fence, owner_digest). */
        ACCEPT_FENCE(true, "resource", "fence", "owner_digest"),
        /** Takes or keeps the caller's place in the key's queue. */
        JOIN(true, "key", "owner", "queue_ms", "holder", "wake"),
        /** Live waiters ahead of the caller (absent where a notification wakes waiters). */
        POSITION(false, "key", "owner"),
        /** Deletes the key's ended places before a first join (absent where release does it). */
        CLEANUP(false, "key"),
        /** Deletes the place of a caller just granted the key (absent where the acquire does it). */
        FORGET(false, "key", "owner"),
        /** Drops a waiter's place and hands on a key given to it (absent: forget, then release). */
        LEAVE(false, "key", "owner"),
        /** Ended places read without locking: (lock_key, owner_token) (absent: one DELETE does it). */
        ENDED_PLACES(false, "limit"),
        /** Deletes ended places: up to a limit, or one listed place still ended. */
        DELETE_ENDED_PLACES(true, "key", "owner", "limit");

        final boolean required;
        final Set<String> parameters;
        /** The parameters in declared order: the order of the values of {@link SqlDialect#prepare}. */
        final List<String> order;

        Op(boolean required, String... parameters) {
            this.required = required;
            this.parameters = Set.of(parameters);
            this.order = List.of(parameters);
        }
    }

    private final Database database;
    private final Map<Op, SqlStatement> statements;
    private final Map<Op, int[]> positions;
    private final boolean acquireReportsGranted;
    private final boolean releaseReturnsRows;
    private final boolean retriesDuplicateKey;
    private final boolean releaseEndsOwnPlace;

    private SqlDialect(Builder builder) {
        this.database = builder.database;
        this.statements = new EnumMap<>(builder.statements);
        this.positions = new EnumMap<>(Op.class);
        statements.forEach((op, statement) -> positions.put(op, statement.positionsIn(op.order)));
        this.acquireReportsGranted = builder.acquireReportsGranted;
        this.releaseReturnsRows = builder.releaseReturnsRows;
        this.retriesDuplicateKey = builder.retriesDuplicateKey;
        this.releaseEndsOwnPlace = !builder.releaseLeavesOwnPlace;
    }

    static Builder builder(Database database) {
        return new Builder(database);
    }

    /** The database this dialect speaks to. */
    Database database() {
        return database;
    }

    /** The statement of {@code op}, or null where the dialect has none ({@link #has}). */
    SqlStatement get(Op op) {
        return statements.get(op);
    }

    /**
     * Prepares the statement of {@code op} with {@code values} given in the order of the op's
     * declared parameters ({@code ACQUIRE}: key, owner, lease_ms, holder), each bound wherever the
     * statement names it; no map is built and no name looked up per call.
     *
     * @throws IllegalArgumentException if {@code values} is not one per declared parameter
     */
    PreparedStatement prepare(Connection connection, Op op, Object... values) throws SQLException {
        if (values.length != op.order.size()) {
            throw new IllegalArgumentException(op + " takes " + op.order + ", given " + values.length + " values");
        }
        return statements.get(op).prepare(connection, positions.get(op), values);
    }

    boolean has(Op op) {
        return statements.containsKey(op);
    }

    /** Whether acquire's fifth column says if the row is a grant (otherwise: its owner is the caller). */
    boolean acquireReportsGranted() {
        return acquireReportsGranted;
    }

    /** Whether release and force-release are queries returning the ended grant (they notify listeners). */
    boolean releaseReturnsRows() {
        return releaseReturnsRows;
    }

    /**
     * Whether acquire may fail with a duplicate key when two callers create the same row at once
     * (H2's MERGE); it is then run again and finds the row.
     */
    boolean retriesDuplicateKey() {
        return retriesDuplicateKey;
    }

    /**
     * Whether RELEASE also ends the releaser's own place in the key's queue; where it does not
     * (H2's single-table MERGE), the store deletes the place first (FORGET) when the releaser may
     * have one.
     */
    boolean releaseEndsOwnPlace() {
        return releaseEndsOwnPlace;
    }

    /** Declares a dialect; refuses a statement whose parameters its operation does not have. */
    static final class Builder {
        private final Database database;
        private final Map<Op, SqlStatement> statements = new EnumMap<>(Op.class);
        private boolean acquireReportsGranted;
        private boolean releaseReturnsRows;
        private boolean retriesDuplicateKey;
        private boolean releaseLeavesOwnPlace;

        private Builder(Database database) {
            this.database = Objects.requireNonNull(database);
        }

        Builder statement(Op op, String namedSql) {
            SqlStatement statement = SqlStatement.of(namedSql);
            for (String name : statement.parameters()) {
                if (!op.parameters.contains(name)) {
                    throw new IllegalArgumentException(
                            database.id() + " " + op + " uses :" + name + ", not one of " + op.parameters);
                }
            }
            statements.put(op, statement);
            return this;
        }

        Builder acquireReportsGranted() {
            this.acquireReportsGranted = true;
            return this;
        }

        Builder releaseReturnsRows() {
            this.releaseReturnsRows = true;
            return this;
        }

        Builder retriesDuplicateKey() {
            this.retriesDuplicateKey = true;
            return this;
        }

        Builder releaseLeavesOwnPlace() {
            this.releaseLeavesOwnPlace = true;
            return this;
        }

        SqlDialect build() {
            for (Op op : Op.values()) {
                if (op.required && !statements.containsKey(op)) {
                    throw new IllegalStateException(database.id() + " dialect has no " + op + " statement");
                }
            }
            return new SqlDialect(this);
        }
    }
}
