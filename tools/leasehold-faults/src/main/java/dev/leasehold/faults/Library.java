package dev.leasehold.faults;

import com.fasterxml.jackson.databind.ObjectMapper;
import dev.leasehold.Lease;
import dev.leasehold.LeaseListener;
import dev.leasehold.LockKey;
import dev.leasehold.LockService;
import dev.leasehold.idempotency.CanonicalJson;
import dev.leasehold.idempotency.IdempotentExecutor;
import dev.leasehold.idempotency.RequestContext;
import dev.leasehold.idempotency.RequestRecords;
import dev.leasehold.idempotency.SideEffects;
import dev.leasehold.idempotency.StoredResponse;
import dev.leasehold.jdbc.Database;
import dev.leasehold.jdbc.FencedUpdate;
import dev.leasehold.jdbc.JdbcLeaseStore;
import dev.leasehold.jdbc.StaleFenceException;
import dev.leasehold.redis.RedisLeaseStore;
import dev.leasehold.spi.LeaseStore;
import io.lettuce.core.RedisClient;
import io.lettuce.core.RedisURI;
import java.sql.Connection;
import java.sql.SQLException;
import java.time.Duration;
import java.util.List;
import java.util.Objects;
import javax.sql.DataSource;

/**
 * Every call the suite makes into Leasehold's own API, in one place: stores, lock services,
 * fenced writes, request records, side effects. The scenarios go through these methods only, so
 * when an API changes, this class is the one to change.
 */
final class Library {

    private Library() {}

    /** A lease store and what must be closed with it. */
    record Store(LeaseStore store, AutoCloseable resources) implements AutoCloseable {
        @Override
        public void close() {
            store.close();
            try {
                resources.close();
            } catch (Exception e) {
                System.err.println("[faults] closing a store's resources failed: " + e);
            }
        }
    }

    /** A Lettuce client for {@code uri}, every command bounded by {@code timeout}. */
    static RedisClient redisClient(RedisURI uri) {
        return RedisClient.create(uri);
    }

    /** A standalone Redis URI with a command timeout. */
    static RedisURI redisUri(String uri, Duration timeout) {
        RedisURI parsed = RedisURI.create(uri);
        parsed.setTimeout(timeout);
        return parsed;
    }

    /** A Redis lease store of its own client, keys under {@code prefix}. */
    static Store redisStore(RedisURI uri, String prefix) {
        RedisClient client = redisClient(uri);
        try {
            return new Store(RedisLeaseStore.builder(client).keyPrefix(prefix).build(), client::shutdown);
        } catch (RuntimeException e) {
            client.shutdown();
            throw e;
        }
    }

    /**
     * A Redis lease store for a replicated deployment (Sentinel): grants acknowledged by a replica
     * where the store offers it.
     */
    static Store replicatedRedisStore(RedisURI uri, String prefix) {
        RedisClient client = redisClient(uri);
        try {
            return new Store(
                    RedisLeaseStore.builder(client)
                            .keyPrefix(prefix)
                            .replicaAcknowledgement(1, Duration.ofMillis(500))
                            .build(),
                    client::shutdown);
        } catch (RuntimeException e) {
            client.shutdown();
            throw e;
        }
    }

    /** An etcd lease store of its own client on {@code endpoints}, keys under {@code prefix}. */
    static Store etcdStore(List<String> endpoints, String prefix) {
        io.etcd.jetcd.Client client = io.etcd.jetcd.Client.builder()
                .endpoints(endpoints.toArray(String[]::new))
                .build();
        try {
            return new Store(
                    dev.leasehold.etcd.EtcdLeaseStore.builder(client)
                            .keyPrefix(prefix)
                            .timeout(Duration.ofSeconds(1))
                            .build(),
                    client::close);
        } catch (RuntimeException e) {
            client.close();
            throw e;
        }
    }

    /** A SQL lease store on {@code dataSource}. */
    static Store jdbcStore(DataSource dataSource, Database database) {
        return new Store(JdbcLeaseStore.builder(dataSource).database(database).build(), () -> {});
    }

    /** A lock service over {@code store}, with listeners. */
    static LockService locks(LeaseStore store, LeaseListener... listeners) {
        LockService.Builder builder = LockService.builder(store);
        for (LeaseListener listener : listeners) {
            builder.listener(listener);
        }
        return builder.build();
    }

    /** A write that runs in the transaction of a fenced write. */
    @FunctionalInterface
    interface Write {
        void run(Connection transaction) throws SQLException;
    }

    /**
     * Runs {@code write} guarded by the lease's fence on the lease's own key, committing it if the
     * fence is accepted.
     *
     * @return whether the write was accepted (false: a newer fence was, nothing was written)
     */
    static boolean fencedWrite(DataSource dataSource, Lease lease, Write write) throws SQLException {
        Objects.requireNonNull(lease, "lease");
        try {
            FencedUpdate.on(dataSource).run(lease, connection -> {
                write.run(connection);
                return null;
            });
            return true;
        } catch (StaleFenceException e) {
            return false;
        }
    }

    /**
     * In the caller's transaction on {@code connection} (autocommit off): records the lease's fence
     * for its key if it is the newest, without committing.
     *
     * @return whether the caller may write
     */
    static boolean acceptFence(DataSource dataSource, Connection connection, Lease lease) throws SQLException {
        return FencedUpdate.on(dataSource).tryAccept(connection, lease);
    }

    /** Request records with a short stale threshold, so a crashed request is taken over quickly. */
    static RequestRecords records(DataSource dataSource, Database database, Duration staleAfter) {
        return RequestRecords.builder(dataSource)
                .database(database)
                .staleAfter(staleAfter)
                .build();
    }

    /** Side-effect records with a short stale threshold. */
    static SideEffects sideEffects(DataSource dataSource, Database database, Duration staleAfter) {
        return SideEffects.builder(dataSource)
                .database(database)
                .staleAfter(staleAfter)
                .objectMapper(new ObjectMapper())
                .build();
    }

    static IdempotentExecutor executor(RequestRecords records, LockService locks) {
        return new IdempotentExecutor(records, locks);
    }

    /** The fingerprint of a JSON payload, as request records want it. */
    static String fingerprint(String json) {
        return CanonicalJson.fingerprint(json);
    }

    /** What a request's business step writes, on the connection it is given. */
    @FunctionalInterface
    interface BusinessWrite {
        /** Writes, and returns the response body to store. */
        String run(Connection transaction, RequestContext context) throws SQLException;
    }

    /** What a request came to, in the suite's terms. */
    record RequestOutcome(boolean completed, boolean replayed, int status, String body, String conflict) {}

    /** The business step of a request: returns the response body to store. */
    @FunctionalInterface
    interface Step {
        String run(RequestContext context) throws Exception;
    }

    /**
     * The business step as a side effect ({@link SideEffects#runOnce}): the write and its SUCCESS
     * mark commit in one transaction; {@code afterCommit} runs right after that commit.
     */
    static Step asSideEffect(SideEffects effects, String argumentsJson, BusinessWrite write, Runnable afterCommit) {
        return context -> {
            String body = effects.runOnce(
                            context.request(),
                            "write",
                            argumentsJson,
                            String.class,
                            connection -> write.run(connection, context))
                    .value();
            afterCommit.run();
            return body;
        };
    }

    /** One submission of an idempotent request (no session lease) whose business step is {@code step}. */
    static RequestOutcome request(IdempotentExecutor executor, String scope, String key, String payloadJson, Step step)
            throws Exception {
        return request(executor, scope, key, payloadJson, null, Duration.ofSeconds(30), step);
    }

    /**
     * One submission of an idempotent request whose business step is {@code step}, holding the
     * lease of {@code session} (taken without waiting; {@code null}: none) while it runs.
     */
    static RequestOutcome request(
            IdempotentExecutor executor,
            String scope,
            String key,
            String payloadJson,
            LockKey session,
            Duration sessionLease,
            Step step)
            throws Exception {
        IdempotentExecutor.Submission submission =
                new IdempotentExecutor.Submission(scope, key, fingerprint(payloadJson), session, sessionLease);
        return toOutcome(executor.execute(submission, context -> new StoredResponse(200, step.run(context))));
    }

    private static RequestOutcome toOutcome(IdempotentExecutor.Outcome outcome) {
        if (outcome instanceof IdempotentExecutor.Completed completed) {
            return new RequestOutcome(
                    true,
                    completed.replayed(),
                    completed.response().status(),
                    completed.response().body(),
                    null);
        }
        if (outcome instanceof IdempotentExecutor.Conflict conflict) {
            return new RequestOutcome(false, false, 409, null, conflict.reason().name());
        }
        return new RequestOutcome(false, false, 422, null, "MISMATCH");
    }
}
