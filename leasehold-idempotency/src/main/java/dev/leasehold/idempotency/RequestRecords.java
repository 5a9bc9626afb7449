package dev.leasehold.idempotency;

import dev.leasehold.jdbc.Database;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Types;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Objects;
import java.util.Optional;
import java.util.regex.Pattern;
import javax.sql.DataSource;

/**
 * Request records (seed features S1.3 to S1.6, B6): one row per (scope, client key) in {@code
 * leasehold_request}, states PROCESSING, SUCCESS and ERROR.
 *
 * <p>{@link #begin} is find-or-create under races: a missing record is inserted, and a concurrent
 * twin's duplicate-key error means "read the winner", never a failure (S1.4, S1.13). Then:
 *
 * <pre>
 *   (none) ──insert──────────────▶ PROCESSING  Claimed(NEW)
 *   payload differs ─────────────▶ Mismatch   (nothing changes)
 *   SUCCESS ─────────────────────▶ Replay     (nothing changes)
 *   ERROR ──CAS on its token─────▶ PROCESSING  Claimed(RETRY), new token, fence + 1
 *   PROCESSING, heartbeat fresh ─▶ InProgress (nothing changes)
 *   PROCESSING, heartbeat stale ─CAS on its token + age─▶ PROCESSING  Claimed(TAKE_OVER), new token, fence + 1
 *   PROCESSING ──complete(token, fence)─▶ SUCCESS     │ ──fail(token, fence)─▶ ERROR
 *   PROCESSING ──giveBack(token, fence)─▶ every field it had before the claim
 *   past retention, or PROCESSING without a heartbeat for abandonedAfter ──purgeExpired─▶ (deleted)
 * </pre>
 *
 * Every transition is one UPDATE that names the expected token and fence, so a caller that does not
 * own the record can change nothing: a duplicate submit never disturbs the owner. {@link
 * #completeInTransaction} runs that UPDATE in the caller's own transaction, so the SUCCESS mark
 * and the business write commit together or not at all, and a taken-over execution cannot commit
 * either ({@code AbstractExactlyOnceTest#rollbackOfTheCallersTransactionLeavesNoReceipt},
 * {@code #takenOverExecutionCannotCommitItsBusinessWrite}). Staleness is judged by the database
 * clock (B5). Keys are checked by {@link IdempotencyKeys}. A missing table is reported as {@link
 * IdempotencySchemaMissingException} ({@code AbstractIdempotencyTest#missingTableIsNamedWithItsMigration}).
 * Thread-safe.
 */
public final class RequestRecords {

    private static final Pattern FINGERPRINT = Pattern.compile("(v1:)?[0-9a-f]{64}");

    private final DataSource dataSource;
    private final Database database;
    private final Duration staleAfter;
    private final Duration retention;
    private final Duration abandonedAfter;
    private final Duration heartbeatLockTimeout;

    private RequestRecords(Builder builder) {
        this.dataSource = builder.dataSource;
        this.database = builder.database != null ? builder.database : Database.detect(builder.dataSource);
        this.staleAfter = builder.staleAfter;
        this.retention = builder.retention;
        this.abandonedAfter = builder.abandonedAfter != null
                ? builder.abandonedAfter
                : Collections.max(List.of(builder.retention, builder.staleAfter.multipliedBy(2)));
        this.heartbeatLockTimeout = builder.heartbeatLockTimeout != null
                ? builder.heartbeatLockTimeout
                : clamp(builder.staleAfter.dividedBy(6), Duration.ofMillis(20), Duration.ofSeconds(2));
    }

    private static Duration clamp(Duration value, Duration min, Duration max) {
        return value.compareTo(min) < 0 ? min : value.compareTo(max) > 0 ? max : value;
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
        return database;
    }

    private String sql(String template) {
        return Statements.sql(template, database);
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
        if (fingerprint == null || !FINGERPRINT.matcher(fingerprint).matches()) {
            throw new IllegalArgumentException(
                    "fingerprint must be 'v1:' and 64 lower-case hex characters (CanonicalJson.fingerprint),"
                            + " or 64 lower-case hex characters, was "
                            + fingerprint);
        }
        for (int attempt = 0; attempt < 5; attempt++) {
            Optional<Row> found = read(scope, clientKey);
            if (found.isEmpty()) {
                String id = Jdbc.newId();
                String token = Jdbc.newId();
                if (insert(id, scope, clientKey, fingerprint, token)) {
                    return new Claim.Claimed(
                            new RequestHandle(id, scope, clientKey, token, 1, Claim.Kind.NEW, null, null, 0));
                }
                continue; // a twin created it first: read the winner
            }
            Row row = found.get();
            if (!sameFingerprint(row.fingerprint, fingerprint)) {
                return new Claim.Mismatch(row.id);
            }
            switch (row.status) {
                case "SUCCESS" -> {
                    return new Claim.Replay(row.id, row.response());
                }
                case "ERROR" -> {
                    String token = Jdbc.newId();
                    if (update(row.id, Statements.RECLAIM_ERROR, token, row.id, row.token, row.fence) == 1) {
                        return claimed(row, scope, clientKey, token, Claim.Kind.RETRY);
                    }
                }
                case "PROCESSING" -> {
                    if (row.ageMs < staleAfter.toMillis()) {
                        return new Claim.InProgress(row.id);
                    }
                    String token = Jdbc.newId();
                    // A record that looks stale while its row is locked belongs to a live
                    // transaction (an owner marking it done): in progress, not taken over.
                    int taken = LockTimeouts.updateUnlessLocked(
                            dataSource,
                            database,
                            heartbeatLockTimeout,
                            "leasehold_request",
                            row.id,
                            "take over request",
                            sql(Statements.TAKE_OVER_REQUEST),
                            token,
                            row.id,
                            row.token,
                            row.fence,
                            staleAfter.toMillis());
                    if (taken == LockTimeouts.LOCKED) {
                        return new Claim.InProgress(row.id);
                    }
                    if (taken == 1) {
                        return claimed(row, scope, clientKey, token, Claim.Kind.TAKE_OVER);
                    }
                }
                default -> throw new IllegalStateException("request " + row.id + " has unknown status " + row.status);
            }
            // Lost a race for the same transition: read again.
        }
        return new Claim.InProgress(read(scope, clientKey).map(r -> r.id).orElse("unknown"));
    }

    /** Equal, or a record stored before fingerprints had a version: its hash is the v1 hash. */
    private static boolean sameFingerprint(String stored, String given) {
        return stored.equals(given) || ("v1:" + stored).equals(given);
    }

    private static Claim.Claimed claimed(Row row, String scope, String clientKey, String token, Claim.Kind kind) {
        return new Claim.Claimed(new RequestHandle(
                row.id,
                scope,
                clientKey,
                token,
                row.fence + 1,
                kind,
                row.status,
                row.token,
                row.updatedAtMs,
                row.errorMessage,
                row.expiresAtMs));
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
        return Jdbc.autoCommit(dataSource, "heartbeat of request", handle.id(), c -> {
            boolean autoCommit = c.getAutoCommit();
            try {
                c.setAutoCommit(false);
                LockTimeouts.apply(c, database, heartbeatLockTimeout, "leasehold_request", handle.id());
                int updated;
                try (PreparedStatement s = c.prepareStatement(
                        LockTimeouts.statement(database, heartbeatLockTimeout, sql(Statements.HEARTBEAT_REQUEST)))) {
                    s.setQueryTimeout(LockTimeouts.querySeconds(heartbeatLockTimeout));
                    s.setString(1, handle.id());
                    s.setString(2, handle.token());
                    s.setLong(3, handle.fence());
                    updated = s.executeUpdate();
                }
                c.commit();
                return updated == 1;
            } catch (SQLException | RuntimeException e) {
                c.rollback();
                throw e;
            } finally {
                c.setAutoCommit(autoCommit);
            }
        });
    }

    /**
     * Marks the request SUCCESS with the response every later submit will get, in a transaction of
     * its own. The work's writes are not in that transaction: prefer {@link #completeInTransaction}.
     *
     * @throws IdempotencyConflictException (TAKEN_OVER) if the record is no longer this claimant's
     */
    public void complete(RequestHandle handle, StoredResponse response) {
        Objects.requireNonNull(response, "response is missing (null)");
        int updated =
                Jdbc.autoCommit(dataSource, "complete request", handle.id(), c -> markSuccess(c, handle, response));
        if (updated != 1) {
            throw takenOver(handle);
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
            throw takenOver(handle);
        }
    }

    private int markSuccess(Connection c, RequestHandle handle, StoredResponse response) throws SQLException {
        try (PreparedStatement s = c.prepareStatement(sql(Statements.COMPLETE_REQUEST))) {
            s.setInt(1, response.status());
            byte[] body = response.bodyBytes();
            if (body == null) {
                s.setNull(2, Types.VARBINARY);
            } else {
                s.setBytes(2, body);
            }
            s.setString(3, response.contentType());
            s.setString(4, ResponseHeaders.encode(response.headers()));
            s.setLong(5, retention.toMillis());
            s.setString(6, handle.id());
            s.setString(7, handle.token());
            s.setLong(8, handle.fence());
            return s.executeUpdate();
        }
    }

    private static IdempotencyConflictException takenOver(RequestHandle handle) {
        return new IdempotencyConflictException(
                IdempotencyConflictException.Reason.TAKEN_OVER,
                "request " + handle.clientKey() + " was taken over by another execution; its result was not stored");
    }

    /**
     * Marks the request ERROR, so a later submit of the same key retries it. Only for work that
     * committed nothing.
     *
     * @return false if the record is no longer this claimant's (then nothing changed)
     */
    public boolean fail(RequestHandle handle, String message) {
        return Jdbc.autoCommit(dataSource, "fail request", handle.id(), c -> {
            try (PreparedStatement s = c.prepareStatement(sql(Statements.FAIL_REQUEST))) {
                s.setString(1, Jdbc.truncate(message == null ? "failed" : message, 1000));
                s.setLong(2, retention.toMillis());
                s.setString(3, handle.id());
                s.setString(4, handle.token());
                s.setLong(5, handle.fence());
                return s.executeUpdate() == 1;
            }
        });
    }

    /**
     * Undoes a claim that cannot go ahead (S1.6), before its work wrote anything: a retry or
     * take-over gets back every field the claim changed (status, token, fence, heartbeat, error
     * text, expiry), so its real owner is not disturbed and the record stays purgeable ({@code
     * AbstractIdempotencyTest#giveBackRestoresEveryFieldTheClaimChanged}); a new record is marked
     * ERROR so that a resubmit can retry it.
     *
     * @return false if the record is no longer this claimant's
     */
    public boolean giveBack(RequestHandle handle, String reason) {
        if (handle.kind() == Claim.Kind.NEW) {
            return fail(handle, "not started: " + reason);
        }
        return Jdbc.autoCommit(dataSource, "give back request", handle.id(), c -> {
            try (PreparedStatement s = c.prepareStatement(sql(Statements.GIVE_BACK_REQUEST))) {
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
        return read(scope, clientKey)
                .map(r -> new RequestRecord(
                        r.id,
                        r.status,
                        r.fence,
                        r.status.equals("SUCCESS") ? r.response() : null,
                        r.errorMessage,
                        Duration.ofMillis(Math.max(0, r.ageMs))));
    }

    /**
     * Deletes at most {@code limit} records, with their side effects: completed ones past their
     * retention, and PROCESSING ones whose heartbeat stopped longer than {@link #abandonedAfter()}
     * ago (their execution crashed). A live PROCESSING record is never touched ({@code
     * AbstractIdempotencyTest#purgeRemovesAbandonedProcessingRecordsButNotLiveOrRetainedOnes}).
     *
     * @return how many requests were deleted
     */
    public int purgeExpired(int limit) {
        if (limit < 1 || limit > 10_000) {
            throw new IllegalArgumentException("limit must be between 1 and 10000, was " + limit);
        }
        List<String> ids = Jdbc.autoCommit(dataSource, "find expired requests", "(all)", c -> {
            List<String> found = new ArrayList<>();
            try (PreparedStatement s = c.prepareStatement(sql(Statements.EXPIRED_REQUESTS))) {
                s.setLong(1, abandonedAfter.toMillis());
                s.setInt(2, limit);
                try (ResultSet rs = s.executeQuery()) {
                    while (rs.next()) {
                        found.add(rs.getString(1));
                    }
                }
            }
            return found;
        });
        int deleted = 0;
        for (String id : ids) {
            deleted += purge(id);
        }
        return deleted;
    }

    /** How many records there are, how many PROCESSING, and the oldest PROCESSING heartbeat's age (gauges). */
    public RecordStats stats() {
        return Jdbc.autoCommit(dataSource, "count requests", "(all)", c -> {
            try (PreparedStatement s = c.prepareStatement(sql(Statements.REQUEST_STATS));
                    ResultSet rs = s.executeQuery()) {
                rs.next();
                long oldest = rs.getLong(3);
                boolean none = rs.wasNull();
                return new RecordStats(
                        rs.getLong(1),
                        rs.getLong(2),
                        none ? Optional.empty() : Optional.of(Duration.ofMillis(Math.max(0, oldest))));
            }
        });
    }

    private int purge(String id) {
        try (Connection c = dataSource.getConnection()) {
            boolean autoCommit = c.getAutoCommit();
            c.setAutoCommit(false);
            try (PreparedStatement request = c.prepareStatement(sql(Statements.DELETE_REQUEST));
                    PreparedStatement effects = c.prepareStatement(Statements.DELETE_EFFECTS_OF)) {
                request.setString(1, id);
                request.setLong(2, abandonedAfter.toMillis());
                int deleted = request.executeUpdate();
                if (deleted == 1) {
                    effects.setString(1, id);
                    effects.executeUpdate();
                }
                c.commit();
                return deleted;
            } catch (SQLException | RuntimeException e) {
                c.rollback();
                throw e;
            } finally {
                c.setAutoCommit(autoCommit);
            }
        } catch (SQLException e) {
            throw Jdbc.failure("purge request", id, e);
        }
    }

    // ---------------------------------------------------------------- statements

    private int update(String requestId, String template, Object... args) {
        return Jdbc.update(dataSource, "update request", requestId, sql(template), args);
    }

    private boolean insert(String id, String scope, String clientKey, String fingerprint, String token) {
        return Jdbc.insertUnlessDuplicate(
                dataSource,
                "create request",
                scope + "/" + clientKey,
                sql(Statements.INSERT_REQUEST),
                id,
                scope,
                clientKey,
                fingerprint,
                token);
    }

    private record Row(
            String id,
            String fingerprint,
            String status,
            String token,
            long fence,
            int responseCode,
            String responseBody,
            String errorMessage,
            long updatedAtMs,
            long ageMs,
            Long expiresAtMs,
            byte[] responseBytes,
            String contentType,
            String headers) {

        StoredResponse response() {
            if (responseBody != null && responseBytes == null) {
                return new StoredResponse(responseCode, responseBody); // stored before exact responses
            }
            return StoredResponse.of(responseCode, contentType, ResponseHeaders.decode(headers), responseBytes);
        }
    }

    private Optional<Row> read(String scope, String clientKey) {
        return Jdbc.autoCommit(dataSource, "read request", scope + "/" + clientKey, c -> {
            try (PreparedStatement s = c.prepareStatement(sql(Statements.FIND_REQUEST))) {
                s.setString(1, scope);
                s.setString(2, clientKey);
                try (ResultSet rs = s.executeQuery()) {
                    if (!rs.next()) {
                        return Optional.empty();
                    }
                    long expires = rs.getLong(11);
                    Long expiresAt = rs.wasNull() ? null : expires;
                    return Optional.of(new Row(
                            rs.getString(1),
                            rs.getString(2),
                            rs.getString(3),
                            rs.getString(4),
                            rs.getLong(5),
                            rs.getInt(6),
                            rs.getString(7),
                            rs.getString(8),
                            rs.getLong(9),
                            rs.getLong(10),
                            expiresAt,
                            rs.getBytes(12),
                            rs.getString(13),
                            rs.getString(14)));
                }
            }
        });
    }

    /** Builds {@link RequestRecords}. Not thread-safe. */
    public static final class Builder {
        private final DataSource dataSource;
        private Database database;
        private Duration staleAfter = Duration.ofMinutes(5);
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
         * over (default 5 minutes, the seed's threshold); at least 100 ms.
         */
        public Builder staleAfter(Duration staleAfter) {
            Objects.requireNonNull(staleAfter, "staleAfter is missing (null)");
            if (staleAfter.compareTo(Duration.ofMillis(100)) < 0) {
                throw new IllegalArgumentException("staleAfter must be at least PT0.1S, was " + staleAfter);
            }
            this.staleAfter = staleAfter;
            return this;
        }

        /** How long completed records are kept for replay before {@link #purgeExpired} may delete them (default 1 day). */
        public Builder retention(Duration retention) {
            this.retention = positive("retention", retention);
            return this;
        }

        /**
         * How long a PROCESSING record may go without a heartbeat before {@link #purgeExpired}
         * deletes it as abandoned by a crashed execution (default: the retention, and at least twice
         * the stale threshold). Must exceed the stale threshold.
         */
        public Builder abandonedAfter(Duration abandonedAfter) {
            this.abandonedAfter = positive("abandonedAfter", abandonedAfter);
            return this;
        }

        /**
         * How long a heartbeat waits for a row lock before it gives up and counts as failed (default a
         * sixth of the stale threshold, 20 ms to 2 s). On MariaDB the wait is whole seconds: under 1 s
         * it does not wait.
         */
        public Builder heartbeatLockTimeout(Duration timeout) {
            this.heartbeatLockTimeout = positive("heartbeatLockTimeout", timeout);
            return this;
        }

        private static Duration positive(String name, Duration value) {
            Objects.requireNonNull(value, name + " is missing (null)");
            if (value.isNegative() || value.isZero()) {
                throw new IllegalArgumentException(name + " must be > 0, was " + value);
            }
            return value;
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
