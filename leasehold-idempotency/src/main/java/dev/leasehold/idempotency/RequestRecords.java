package dev.leasehold.idempotency;

import dev.leasehold.LeaseStoreException;
import dev.leasehold.jdbc.Database;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Duration;
import java.util.ArrayList;
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
 *   PROCESSING, heartbeat stale ─CAS on its token + age─▶ PROCESSING  Claimed(TAKE_OVER), new token
 *   PROCESSING ──complete(token)─▶ SUCCESS     │ ──fail(token)─▶ ERROR
 *   PROCESSING ──giveBack(token)─▶ the status, token and heartbeat it had before the claim
 * </pre>
 *
 * Every transition is one UPDATE that names the expected token, so a caller that does not own the
 * record can change nothing: a duplicate submit never disturbs the owner. Staleness is judged by
 * the database clock (B5). Thread-safe.
 */
public final class RequestRecords {

    private static final Pattern FINGERPRINT = Pattern.compile("[0-9a-f]{64}");

    private final DataSource dataSource;
    private final Database database;
    private final Duration staleAfter;
    private final Duration retention;

    private RequestRecords(Builder builder) {
        this.dataSource = builder.dataSource;
        this.database = builder.database != null ? builder.database : Database.detect(builder.dataSource);
        this.staleAfter = builder.staleAfter;
        this.retention = builder.retention;
    }

    /** A builder over {@code dataSource}. */
    public static Builder builder(DataSource dataSource) {
        return new Builder(dataSource);
    }

    /** How long a PROCESSING record may go without a heartbeat before it can be taken over. */
    public Duration staleAfter() {
        return staleAfter;
    }

    private String sql(String template) {
        return Statements.sql(template, database);
    }

    /**
     * Finds or creates the record of a request and decides what the caller may do.
     *
     * @param scope whose key space this is (a chat session, tenant and caller), 1 to 128 characters
     * @param clientKey the client's idempotency key, 1 to 255 characters
     * @param fingerprint the SHA-256 (hex) of the canonical payload, see {@link CanonicalJson}
     * @throws IllegalArgumentException naming a malformed argument
     */
    public Claim begin(String scope, String clientKey, String fingerprint) {
        Jdbc.checkText("scope", scope, 128);
        Jdbc.checkText("client key", clientKey, 255);
        if (fingerprint == null || !FINGERPRINT.matcher(fingerprint).matches()) {
            throw new IllegalArgumentException("fingerprint must be 64 lower-case hex characters (SHA-256)");
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
            if (!row.fingerprint.equals(fingerprint)) {
                return new Claim.Mismatch(row.id);
            }
            switch (row.status) {
                case "SUCCESS" -> {
                    return new Claim.Replay(row.id, new StoredResponse(row.responseCode, row.responseBody));
                }
                case "ERROR" -> {
                    String token = Jdbc.newId();
                    if (update(row.id, RECLAIM, token, row.id, row.token) == 1) {
                        return claimed(row, scope, clientKey, token, Claim.Kind.RETRY);
                    }
                }
                case "PROCESSING" -> {
                    if (row.ageMs < staleAfter.toMillis()) {
                        return new Claim.InProgress(row.id);
                    }
                    String token = Jdbc.newId();
                    if (update(row.id, TAKE_OVER, token, row.id, row.token, staleAfter.toMillis()) == 1) {
                        return claimed(row, scope, clientKey, token, Claim.Kind.TAKE_OVER);
                    }
                }
                default -> throw new IllegalStateException("request " + row.id + " has unknown status " + row.status);
            }
            // Lost a race for the same transition: read again.
        }
        return new Claim.InProgress(read(scope, clientKey).map(r -> r.id).orElse("unknown"));
    }

    private static Claim.Claimed claimed(Row row, String scope, String clientKey, String token, Claim.Kind kind) {
        return new Claim.Claimed(new RequestHandle(
                row.id, scope, clientKey, token, row.fence + 1, kind, row.status, row.token, row.updatedAtMs));
    }

    /**
     * Refreshes the heartbeat of a claimed record.
     *
     * @return false if the record is no longer this claimant's (taken over, completed)
     */
    public boolean heartbeat(RequestHandle handle) {
        return update(handle.id(), HEARTBEAT, handle.id(), handle.token()) == 1;
    }

    /**
     * Marks the request SUCCESS with the response every later submit will get.
     *
     * @throws IdempotencyConflictException (TAKEN_OVER) if the record is no longer this claimant's
     */
    public void complete(RequestHandle handle, StoredResponse response) {
        Objects.requireNonNull(response, "response is missing (null)");
        int updated = Jdbc.autoCommit(dataSource, "complete request", handle.id(), c -> {
            try (PreparedStatement s = c.prepareStatement(sql(Statements.COMPLETE_REQUEST))) {
                s.setInt(1, response.status());
                s.setString(2, response.body());
                s.setLong(3, retention.toMillis());
                s.setString(4, handle.id());
                s.setString(5, handle.token());
                return s.executeUpdate();
            }
        });
        if (updated != 1) {
            throw new IdempotencyConflictException(
                    IdempotencyConflictException.Reason.TAKEN_OVER,
                    "request " + handle.clientKey()
                            + " was taken over by another execution; its result was not stored");
        }
    }

    /**
     * Marks the request ERROR, so a later submit of the same key retries it.
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
                return s.executeUpdate() == 1;
            }
        });
    }

    /**
     * Undoes a claim that cannot go ahead (S1.6): a retry or take-over gets back the status, token and
     * heartbeat it had, so its real owner is not disturbed; a new record is marked ERROR so that a
     * resubmit can retry it.
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
                s.setString(4, handle.id());
                s.setString(5, handle.token());
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
                        r.status.equals("SUCCESS") ? new StoredResponse(r.responseCode, r.responseBody) : null,
                        r.errorMessage,
                        Duration.ofMillis(Math.max(0, r.ageMs))));
    }

    /**
     * Deletes at most {@code limit} completed records past their retention, with their side effects.
     * PROCESSING records are never touched.
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
                s.setInt(1, limit);
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

    private int purge(String id) {
        try (Connection c = dataSource.getConnection()) {
            boolean autoCommit = c.getAutoCommit();
            c.setAutoCommit(false);
            try (PreparedStatement request = c.prepareStatement(sql(Statements.DELETE_REQUEST));
                    PreparedStatement effects = c.prepareStatement(Statements.DELETE_EFFECTS_OF)) {
                request.setString(1, id);
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
            throw new LeaseStoreException("purge request", id, e);
        }
    }

    // ---------------------------------------------------------------- statements

    private static final String RECLAIM = Statements.RECLAIM_ERROR;
    private static final String TAKE_OVER = Statements.TAKE_OVER_REQUEST;
    private static final String HEARTBEAT = Statements.HEARTBEAT_REQUEST;

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
            long ageMs) {}

    private Optional<Row> read(String scope, String clientKey) {
        return Jdbc.autoCommit(dataSource, "read request", scope + "/" + clientKey, c -> {
            try (PreparedStatement s = c.prepareStatement(sql(Statements.FIND_REQUEST))) {
                s.setString(1, scope);
                s.setString(2, clientKey);
                try (ResultSet rs = s.executeQuery()) {
                    if (!rs.next()) {
                        return Optional.empty();
                    }
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
                            rs.getLong(10)));
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
            Objects.requireNonNull(retention, "retention is missing (null)");
            if (retention.isNegative() || retention.isZero()) {
                throw new IllegalArgumentException("retention must be > 0, was " + retention);
            }
            this.retention = retention;
            return this;
        }

        /** The records. */
        public RequestRecords build() {
            return new RequestRecords(this);
        }
    }
}
