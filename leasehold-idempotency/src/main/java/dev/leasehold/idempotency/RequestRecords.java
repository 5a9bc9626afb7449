package dev.leasehold.idempotency;

import dev.leasehold.jdbc.Database;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.sql.Types;
import java.time.Duration;
import java.util.Collections;
import java.util.List;
import java.util.Objects;
import java.util.Optional;
import javax.sql.DataSource;

/**
 * The request records: one row per (scope, client key), PROCESSING, SUCCESS or ERROR. {@link #begin}
 * decides what a submit may do (run, replay, wait, refuse); every later change names the claim's
 * token and fence, so only the claimant can make it. Staleness is judged by the database clock. A
 * missing table is reported as {@link IdempotencySchemaMissingException}. How the records work and
 * which tests prove it: {@code docs/design/idempotency.md}. Thread-safe.
 */
public final class RequestRecords {

    private final RequestTable table;
    private final RequestClaims claims;
    private final RequestHousekeeping housekeeping;
    private final Duration staleAfter;
    private final Duration retention;
    private final Duration abandonedAfter;
    private final Duration heartbeatLockTimeout;

    private RequestRecords(Builder builder) {
        Database database = builder.database != null ? builder.database : Database.detect(builder.dataSource);
        this.table = new RequestTable(builder.dataSource, database);
        this.staleAfter = builder.staleAfter;
        this.retention = builder.retention;
        this.abandonedAfter = builder.abandonedAfter != null
                ? builder.abandonedAfter
                : Collections.max(List.of(builder.retention, builder.staleAfter.multipliedBy(2)));
        this.heartbeatLockTimeout = builder.heartbeatLockTimeout != null
                ? builder.heartbeatLockTimeout
                : RecordDurations.lockWait(builder.staleAfter);
        this.claims = new RequestClaims(table, staleAfter, heartbeatLockTimeout);
        this.housekeeping = new RequestHousekeeping(table, abandonedAfter);
    }

    /** A builder over {@code dataSource}. */
    public static Builder builder(DataSource dataSource) {
        return new Builder(dataSource);
    }

    /** How long a PROCESSING record may go without a heartbeat before it can be taken over. */
    public Duration staleAfter() {
        return staleAfter;
    }

    /** How long completed records are kept for replay. */
    public Duration retention() {
        return retention;
    }

    /** How long a PROCESSING record may go without a heartbeat before {@link #purgeExpired} deletes it. */
    public Duration abandonedAfter() {
        return abandonedAfter;
    }

    /** The database of the records. */
    public Database database() {
        return table.database();
    }

    /**
     * Finds or creates the record of a request and decides what the caller may do.
     *
     * @param scope whose key space this is (a chat session, tenant and caller), 1 to 128 characters
     * @param clientKey the client's idempotency key, see {@link IdempotencyKeys#check}
     * @param fingerprint {@code v1:} and the SHA-256 (hex) of the canonical payload, see {@link
     *     CanonicalJson#fingerprint}; or 64 lower-case hex characters without a version (a digest the
     *     caller makes itself, compared as given)
     * @throws InvalidIdempotencyKeyException naming the rule a key breaks
     * @throws IllegalArgumentException naming another malformed argument
     */
    public Claim begin(String scope, String clientKey, String fingerprint) {
        Jdbc.checkText("scope", scope, 128);
        IdempotencyKeys.check(clientKey);
        Fingerprints.check(fingerprint);
        return claims.claim(scope, clientKey, fingerprint);
    }

    /**
     * Refreshes the heartbeat of a claimed record. The UPDATE waits at most a short lock timeout
     * (a sixth of the stale threshold, 20 ms to 2 s, see {@link Builder#heartbeatLockTimeout}) for
     * a row lock, so a heartbeat never hangs behind a long transaction.
     *
     * @return false if the record is no longer this claimant's (taken over, completed)
     * @throws dev.leasehold.LeaseStoreException if the database failed or the lock wait timed out
     */
    public boolean heartbeat(RequestHandle handle) {
        int updated = LockTimeouts.update(
                table.dataSource(),
                table.database(),
                heartbeatLockTimeout,
                "leasehold_request",
                handle.id(),
                "heartbeat of request",
                false,
                table.sql(Statements.HEARTBEAT_REQUEST),
                handle.id(),
                handle.token(),
                handle.fence());
        return updated == 1;
    }

    /**
     * Marks the request SUCCESS with the response every later submit will get, in a transaction of
     * its own. The work's writes are not in that transaction: prefer {@link #completeInTransaction}.
     *
     * @throws IdempotencyConflictException (TAKEN_OVER) if the record is no longer this claimant's
     */
    public void complete(RequestHandle handle, StoredResponse response) {
        Objects.requireNonNull(response, "response is missing (null)");
        int updated = Jdbc.autoCommit(
                table.dataSource(), "complete request", handle.id(), c -> markSuccess(c, handle, response));
        if (updated != 1) {
            throw StoredResponses.takenOver(handle);
        }
    }

    /**
     * Marks the request SUCCESS with {@code response} in the caller's open transaction on {@code
     * transaction}: the mark commits or rolls back with the caller's business write, and the UPDATE
     * names this claim's token and fence, so an execution whose claim was taken over changes nothing
     * here, and must roll back its write. Neither commits nor closes the connection. The row stays
     * locked until the transaction ends: run this last, just before the commit.
     *
     * @throws IdempotencyConflictException (TAKEN_OVER) if the record is no longer this claimant's:
     *     roll back
     * @throws IllegalStateException if the connection is in autocommit mode
     */
    public void completeInTransaction(Connection transaction, RequestHandle handle, StoredResponse response) {
        Objects.requireNonNull(transaction, "transaction is missing (null)");
        Objects.requireNonNull(handle, "handle is missing (null)");
        Objects.requireNonNull(response, "response is missing (null)");
        int updated;
        try {
            if (transaction.getAutoCommit()) {
                throw new IllegalStateException("completeInTransaction needs an open transaction (autocommit off),"
                        + " so that the SUCCESS mark commits with the business write");
            }
            updated = markSuccess(transaction, handle, response);
        } catch (SQLException e) {
            throw Jdbc.failure("complete request", handle.id(), e);
        }
        if (updated != 1) {
            throw StoredResponses.takenOver(handle);
        }
    }

    private int markSuccess(Connection c, RequestHandle handle, StoredResponse response) throws SQLException {
        return StoredResponses.markSuccess(c, table.sql(Statements.COMPLETE_REQUEST), handle, response, retention);
    }

    /**
     * Marks the request ERROR, so a later submit of the same key retries it. Only for work that
     * committed nothing.
     *
     * @return false if the record is no longer this claimant's (then nothing changed)
     */
    public boolean fail(RequestHandle handle, String message) {
        String text = Jdbc.truncate(message == null ? "failed" : message, 1000);
        int updated = table.update(
                "fail request",
                handle.id(),
                Statements.FAIL_REQUEST,
                text,
                retention.toMillis(),
                handle.id(),
                handle.token(),
                handle.fence());
        return updated == 1;
    }

    /**
     * Undoes a claim that cannot go ahead, before its work wrote anything: a retry or take-over
     * gets back every field the claim changed (status, token, fence, heartbeat, error text, expiry),
     * so its real owner is not disturbed and the record stays purgeable; a new record is marked
     * ERROR so that a resubmit can retry it.
     *
     * @return false if the record is no longer this claimant's
     */
    public boolean giveBack(RequestHandle handle, String reason) {
        if (handle.kind() == Claim.Kind.NEW) {
            return fail(handle, "not started: " + reason);
        }
        return Jdbc.autoCommit(table.dataSource(), "give back request", handle.id(), c -> {
            try (PreparedStatement s = c.prepareStatement(table.sql(Statements.GIVE_BACK_REQUEST))) {
                s.setString(1, handle.previousStatus());
                s.setString(2, handle.previousToken());
                s.setLong(3, handle.previousUpdatedAtMs());
                s.setString(4, handle.previousErrorMessage());
                if (handle.previousExpiresAtMs() == null) {
                    s.setNull(5, Types.BIGINT);
                } else {
                    s.setLong(5, handle.previousExpiresAtMs());
                }
                s.setString(6, handle.id());
                s.setString(7, handle.token());
                s.setLong(8, handle.fence());
                return s.executeUpdate() == 1;
            }
        });
    }

    /** The record of a request as stored, for status polling and operators. */
    public Optional<RequestRecord> find(String scope, String clientKey) {
        return table.read(scope, clientKey)
                .map(r -> new RequestRecord(
                        r.id(),
                        r.status(),
                        r.fence(),
                        r.status().equals("SUCCESS") ? r.response() : null,
                        r.errorMessage(),
                        Duration.ofMillis(Math.max(0, r.ageMs()))));
    }

    /**
     * Deletes at most {@code limit} records, with their side effects: completed ones past their
     * retention, and PROCESSING ones whose heartbeat stopped longer than {@link #abandonedAfter()}
     * ago (their execution crashed). A live PROCESSING record is never touched.
     *
     * @return how many requests were deleted
     */
    public int purgeExpired(int limit) {
        return housekeeping.purgeExpired(limit);
    }

    /** How many records there are, how many PROCESSING, and the oldest PROCESSING heartbeat's age (gauges). */
    public RecordStats stats() {
        return housekeeping.stats();
    }

    /** Builds {@link RequestRecords}. Not thread-safe. */
    public static final class Builder {
        private final DataSource dataSource;
        private Database database;
        private Duration staleAfter = RecordDurations.DEFAULT_STALE_AFTER;
        private Duration retention = Duration.ofDays(1);
        private Duration abandonedAfter;
        private Duration heartbeatLockTimeout;

        private Builder(DataSource dataSource) {
            this.dataSource = Objects.requireNonNull(dataSource, "dataSource is missing (null)");
        }

        /** The database; detected from the data source when not given. */
        public Builder database(Database database) {
            this.database = Objects.requireNonNull(database, "database is missing (null)");
            return this;
        }

        /**
         * How long a PROCESSING record may go without a heartbeat before another submit may take it
         * over (default 5 minutes); at least 100 ms.
         */
        public Builder staleAfter(Duration staleAfter) {
            this.staleAfter = RecordDurations.staleAfter(staleAfter);
            return this;
        }

        /** How long completed records are kept for replay before {@link #purgeExpired} may delete them (default 1 day). */
        public Builder retention(Duration retention) {
            this.retention = RecordDurations.positive("retention", retention);
            return this;
        }

        /**
         * How long a PROCESSING record may go without a heartbeat before {@link #purgeExpired}
         * deletes it as abandoned by a crashed execution (default: the retention, and at least twice
         * the stale threshold). Must exceed the stale threshold.
         */
        public Builder abandonedAfter(Duration abandonedAfter) {
            this.abandonedAfter = RecordDurations.positive("abandonedAfter", abandonedAfter);
            return this;
        }

        /**
         * How long a heartbeat waits for a row lock before it gives up and counts as failed (default a
         * sixth of the stale threshold, 20 ms to 2 s). On MariaDB the wait is whole seconds: under 1 s
         * it does not wait.
         */
        public Builder heartbeatLockTimeout(Duration timeout) {
            this.heartbeatLockTimeout = RecordDurations.positive("heartbeatLockTimeout", timeout);
            return this;
        }

        /** The records. */
        public RequestRecords build() {
            if (abandonedAfter != null && abandonedAfter.compareTo(staleAfter) <= 0) {
                throw new IllegalArgumentException("abandonedAfter (" + abandonedAfter
                        + ") must be longer than staleAfter (" + staleAfter + "), or live requests would be purged");
            }
            return new RequestRecords(this);
        }
    }
}
