package dev.leasehold.idempotency;

import com.fasterxml.jackson.databind.ObjectMapper;
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
import java.util.function.Function;
import javax.sql.DataSource;

/**
 * The side-effect records: a side effect of a request runs at most once per (request, effect name,
 * canonical arguments), and its database write commits in one transaction with its SUCCESS mark and
 * a check that the request is still the caller's. A later call with equal arguments returns the
 * stored result without running anything. Results are stored as JSON by the {@link JsonCodec} given
 * to the builder (the application's mapper). How the records work and which tests prove it: {@code
 * docs/design/idempotency.md}. Thread-safe.
 */
public final class SideEffects {

    private final DataSource dataSource;
    private final Database database;
    private final Duration staleAfter;
    private final JsonCodec codec;

    private SideEffects(Builder builder, JsonCodec codec) {
        this.dataSource = builder.dataSource;
        this.database = builder.database != null ? builder.database : Database.detect(builder.dataSource);
        this.staleAfter = builder.staleAfter;
        this.codec = codec;
    }

    /** A builder over {@code dataSource}. */
    public static Builder builder(DataSource dataSource) {
        return new Builder(dataSource);
    }

    private String sql(String template) {
        return Statements.sql(template, database);
    }

    /** As {@link #runOnce(RequestHandle, String, String, Class, TransactionalEffect, Function)} without a business id. */
    public <T> EffectResult<T> runOnce(
            RequestHandle request,
            String effectName,
            String argumentsJson,
            Class<T> resultType,
            TransactionalEffect<T> effect) {
        return runOnce(request, effectName, argumentsJson, resultType, effect, result -> null);
    }

    /**
     * Runs {@code effect} unless it already succeeded for this request with equal arguments.
     *
     * @param request the claimed request the effect belongs to
     * @param effectName the effect's name, 1 to 100 characters (a tool name, for example)
     * @param argumentsJson the effect's arguments as JSON; canonicalised before hashing
     * @param resultType the result's class, to read a stored result back
     * @param effect the write, run in the transaction that marks it done
     * @param businessId the business id of a result (for recovery), or null
     * @throws IllegalArgumentException if the arguments are not valid JSON or the name is malformed
     * @throws IdempotencyConflictException if the effect is in progress elsewhere or the request was
     *     taken over
     * @throws SideEffectFailedException if the effect threw a checked exception (rolled back, ERROR)
     */
    public <T> EffectResult<T> runOnce(
            RequestHandle request,
            String effectName,
            String argumentsJson,
            Class<T> resultType,
            TransactionalEffect<T> effect,
            Function<T, String> businessId) {
        Objects.requireNonNull(request, "request is missing (null)");
        Jdbc.checkText("effect name", effectName, 100);
        Objects.requireNonNull(resultType, "resultType is missing (null)");
        Objects.requireNonNull(effect, "effect is missing (null)");
        Objects.requireNonNull(businessId, "businessId is missing (null)");
        String hash = CanonicalJson.fingerprint(argumentsJson);
        String legacyHash = hash.substring(hash.indexOf(':') + 1); // stored before hashes had a version

        for (int attempt = 0; attempt < 5; attempt++) {
            Optional<EffectRow> found = read(request.id(), effectName, hash, legacyHash);
            String token = Jdbc.newId();
            if (found.isEmpty()) {
                String id = Jdbc.newId();
                if (insert(id, request.id(), effectName, hash, token)) {
                    return execute(request, effectName, id, token, resultType, effect, businessId);
                }
                continue;
            }
            EffectRow row = found.get();
            switch (row.status) {
                case "SUCCESS" -> {
                    return new EffectResult<>(readResult(row.resultJson, resultType, effectName), row.businessId, true);
                }
                case "ERROR" -> {
                    if (update(row.id, Statements.RECLAIM_EFFECT_ERROR, token, row.id, row.token) == 1) {
                        return execute(request, effectName, row.id, token, resultType, effect, businessId);
                    }
                }
                case "PROCESSING" -> {
                    if (row.ageMs < staleAfter.toMillis()) {
                        throw inProgress(effectName);
                    }
                    int taken = LockTimeouts.update(
                            dataSource,
                            database,
                            RecordDurations.lockWait(staleAfter),
                            "leasehold_effect",
                            row.id,
                            "take over side effect",
                            true,
                            sql(Statements.TAKE_OVER_EFFECT),
                            token,
                            row.id,
                            row.token,
                            staleAfter.toMillis());
                    if (taken == LockTimeouts.LOCKED) {
                        // Stale-looking, but its row is locked by the transaction still running it.
                        throw inProgress(effectName);
                    }
                    if (taken == 1) {
                        return execute(request, effectName, row.id, token, resultType, effect, businessId);
                    }
                }
                default -> throw new IllegalStateException("effect " + row.id + " has unknown status " + row.status);
            }
        }
        throw new IdempotencyConflictException(
                IdempotencyConflictException.Reason.EFFECT_IN_PROGRESS,
                "side effect " + effectName + " is contended by other executions; retry later");
    }

    private static IdempotencyConflictException inProgress(String effectName) {
        return new IdempotencyConflictException(
                IdempotencyConflictException.Reason.EFFECT_IN_PROGRESS,
                "side effect " + effectName + " is being executed by another execution right now");
    }

    private <T> EffectResult<T> execute(
            RequestHandle request,
            String effectName,
            String effectId,
            String token,
            Class<T> resultType,
            TransactionalEffect<T> effect,
            Function<T, String> businessId) {
        Exception failure;
        try (Connection c = dataSource.getConnection()) {
            boolean autoCommit = c.getAutoCommit();
            c.setAutoCommit(false);
            try {
                if (!owned(c, request)) {
                    c.rollback();
                    markError(effectId, token, "request taken over before the effect ran");
                    throw new IdempotencyConflictException(
                            IdempotencyConflictException.Reason.TAKEN_OVER,
                            "request " + request.clientKey() + " was taken over by another execution; " + effectName
                                    + " was not run");
                }
                T result = effect.apply(c);
                String id = result == null ? null : businessId.apply(result);
                String json = codec.write(result);
                try (PreparedStatement mark = c.prepareStatement(sql(Statements.MARK_EFFECT_SUCCESS))) {
                    mark.setString(1, json);
                    mark.setString(2, Jdbc.truncate(id, 128));
                    mark.setString(3, effectId);
                    mark.setString(4, token);
                    if (mark.executeUpdate() != 1) {
                        c.rollback();
                        throw new IdempotencyConflictException(
                                IdempotencyConflictException.Reason.TAKEN_OVER,
                                "side effect " + effectName + " was taken over by another execution; rolled back");
                    }
                }
                if (!touch(c, request)) {
                    c.rollback();
                    markError(effectId, token, "request taken over while the effect ran");
                    throw new IdempotencyConflictException(
                            IdempotencyConflictException.Reason.TAKEN_OVER,
                            "request " + request.clientKey() + " was taken over by another execution while "
                                    + effectName + " ran; rolled back");
                }
                c.commit();
                return new EffectResult<>(result, id, false);
            } catch (IdempotencyConflictException e) {
                throw e;
            } catch (Exception e) {
                failure = e;
                Transactions.rollback(c, e);
            } finally {
                Transactions.restoreAutoCommit(c, autoCommit);
            }
        } catch (SQLException e) {
            failure = e;
        }
        try {
            markError(effectId, token, String.valueOf(failure));
        } catch (RuntimeException e) {
            failure.addSuppressed(e);
        }
        if (failure instanceof RuntimeException runtime) {
            throw runtime;
        }
        if (failure instanceof SQLException sql) {
            throw Jdbc.failure("side effect " + effectName, request.id(), sql);
        }
        throw new SideEffectFailedException(effectName, failure);
    }

    private boolean owned(Connection c, RequestHandle request) throws SQLException {
        try (PreparedStatement s = c.prepareStatement(Statements.OWNED_REQUEST)) {
            s.setString(1, request.id());
            s.setString(2, request.token());
            s.setLong(3, request.fence());
            try (ResultSet rs = s.executeQuery()) {
                return rs.next();
            }
        }
    }

    private boolean touch(Connection c, RequestHandle request) throws SQLException {
        try (PreparedStatement s = c.prepareStatement(sql(Statements.ASSERT_REQUEST_OWNER))) {
            s.setString(1, request.id());
            s.setString(2, request.token());
            s.setLong(3, request.fence());
            return s.executeUpdate() == 1;
        }
    }

    private void markError(String effectId, String token, String message) {
        update(effectId, Statements.MARK_EFFECT_ERROR, Jdbc.truncate(message, 1000), effectId, token);
    }

    private <T> T readResult(String json, Class<T> type, String effectName) {
        try {
            return json == null ? null : codec.read(json, type);
        } catch (Exception e) {
            throw new IllegalStateException(
                    "stored result of " + effectName + " cannot be read as " + type.getName() + ": " + e.getMessage(),
                    e);
        }
    }

    /** The effects of a request that succeeded, oldest first: what a recovery may rebuild a reply from. */
    public List<CompletedEffect> completed(String requestId) {
        return Jdbc.autoCommit(dataSource, "read completed effects", requestId, c -> {
            List<CompletedEffect> effects = new ArrayList<>();
            try (PreparedStatement s = c.prepareStatement(Statements.COMPLETED_EFFECTS)) {
                s.setString(1, requestId);
                try (ResultSet rs = s.executeQuery()) {
                    while (rs.next()) {
                        effects.add(new CompletedEffect(
                                rs.getString(1), rs.getString(2), rs.getString(3), rs.getString(4)));
                    }
                }
            }
            return effects;
        });
    }

    private int update(String effectId, String template, Object... args) {
        return Jdbc.update(dataSource, "update side effect", effectId, sql(template), args);
    }

    private boolean insert(String id, String requestId, String name, String hash, String token) {
        return Jdbc.insertUnlessDuplicate(
                dataSource,
                "create side effect " + name,
                requestId,
                sql(Statements.INSERT_EFFECT),
                id,
                requestId,
                name,
                hash,
                requestId + ":" + name + ":" + hash,
                token);
    }

    private record EffectRow(
            String id, String status, String token, String resultJson, String businessId, long ageMs) {}

    private Optional<EffectRow> read(String requestId, String name, String hash, String legacyHash) {
        return Jdbc.autoCommit(dataSource, "read side effect " + name, requestId, c -> {
            try (PreparedStatement s = c.prepareStatement(sql(Statements.FIND_EFFECT))) {
                s.setString(1, requestId);
                s.setString(2, name);
                s.setString(3, hash);
                s.setString(4, legacyHash);
                try (ResultSet rs = s.executeQuery()) {
                    if (!rs.next()) {
                        return Optional.empty();
                    }
                    return Optional.of(new EffectRow(
                            rs.getString(1),
                            rs.getString(2),
                            rs.getString(3),
                            rs.getString(4),
                            rs.getString(5),
                            rs.getLong(6)));
                }
            }
        });
    }

    /** Builds {@link SideEffects}. Not thread-safe. */
    public static final class Builder {
        private final DataSource dataSource;
        private Database database;
        private Duration staleAfter = RecordDurations.DEFAULT_STALE_AFTER;
        private JsonCodec codec;

        private Builder(DataSource dataSource) {
            this.dataSource = Objects.requireNonNull(dataSource, "dataSource is missing (null)");
        }

        /** The database; detected from the data source when not given. */
        public Builder database(Database database) {
            this.database = Objects.requireNonNull(database, "database is missing (null)");
            return this;
        }

        /** How long a PROCESSING effect may go untouched before another execution takes it over (default 5 minutes). */
        public Builder staleAfter(Duration staleAfter) {
            this.staleAfter = RecordDurations.staleAfter(staleAfter);
            return this;
        }

        /**
         * How results are written and read as JSON: the application's own mapper (for example a
         * Jackson 3 {@code JsonMapper} under Spring Boot 4).
         */
        public Builder codec(JsonCodec codec) {
            this.codec = Objects.requireNonNull(codec, "codec is missing (null)");
            return this;
        }

        /** Results through a Jackson 2 mapper (Jackson 2 must then be on the class path). */
        public Builder objectMapper(ObjectMapper mapper) {
            return codec(new Jackson2Codec(Objects.requireNonNull(mapper, "mapper is missing (null)")));
        }

        /**
         * The side-effect records.
         *
         * @throws IllegalStateException if no codec was given and Jackson 2 is not on the class path
         */
        public SideEffects build() {
            JsonCodec chosen = codec;
            if (chosen == null) {
                if (!Jackson2Codec.present()) {
                    throw new IllegalStateException("SideEffects needs a JSON codec for its results: give"
                            + " codec(JsonCodec) over the application's mapper (Jackson 2 is not on the class path)");
                }
                chosen = Jackson2Codec.plain();
            }
            return new SideEffects(this, chosen);
        }
    }
}
