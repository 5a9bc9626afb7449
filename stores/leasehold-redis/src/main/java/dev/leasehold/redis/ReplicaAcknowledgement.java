package dev.leasehold.redis;

import dev.leasehold.LeaseStoreException;
import io.lettuce.core.RedisException;
import io.lettuce.core.api.StatefulRedisConnection;
import io.lettuce.core.cluster.api.sync.RedisClusterCommands;
import io.lettuce.core.codec.StringCodec;
import io.lettuce.core.output.ArrayOutput;
import io.lettuce.core.protocol.CommandArgs;
import io.lettuce.core.protocol.ProtocolKeyword;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.ConcurrentLinkedDeque;
import java.util.function.Function;
import java.util.function.Predicate;
import java.util.function.Supplier;

/**
 * The writes of a {@link RedisLeaseStore} that return only once replicas ({@code WAIT}) or AOF
 * fsyncs ({@code WAITAOF}) acknowledge them. {@code WAIT} counts the writes of the connection it
 * is sent on and blocks it, so each write runs on a connection of its own, taken from a pool.
 * Thread-safe.
 */
final class ReplicaAcknowledgement {

    private static final ProtocolKeyword WAITAOF = new ProtocolKeyword() {
        @Override
        public byte[] getBytes() {
            return "WAITAOF".getBytes(StandardCharsets.US_ASCII);
        }

        @Override
        public String toString() {
            return "WAITAOF";
        }
    };

    /** Who must acknowledge a write: {@code replicas} (WAIT), or {@code local} and {@code replicas} AOF fsyncs. */
    record Policy(boolean aof, int local, int replicas, Duration timeout) {

        /**
         * A validated policy.
         *
         * @throws IllegalArgumentException if {@code replicas} is below 1 (0 with {@code aof}) or
         *     the timeout is shorter than 1 ms
         */
        static Policy of(boolean aof, int local, int replicas, Duration timeout) {
            Objects.requireNonNull(timeout, "acknowledgement timeout is missing (null)");
            if (replicas < (aof ? 0 : 1)) {
                throw new IllegalArgumentException("replicas must be at least " + (aof ? 0 : 1) + ", was " + replicas);
            }
            if (timeout.toMillis() < 1) {
                throw new IllegalArgumentException("acknowledgement timeout must be at least 1 ms, was " + timeout);
            }
            return new Policy(aof, local, replicas, timeout);
        }
    }

    /** What fell short: which acknowledgement, how many were required and how many arrived. */
    record Shortfall(String what, int required, int acknowledged) {}

    private final Policy policy;
    private final Supplier<StatefulRedisConnection<String, String>> writerFactory;
    private final ConcurrentLinkedDeque<StatefulRedisConnection<String, String>> writers =
            new ConcurrentLinkedDeque<>();
    private volatile boolean closed;

    ReplicaAcknowledgement(Policy policy, Supplier<StatefulRedisConnection<String, String>> writerFactory) {
        this.policy = policy;
        this.writerFactory = writerFactory;
    }

    /**
     * Runs {@code script} on a writer connection; when {@code wrote} says it wrote, waits for the
     * acknowledgements. When they fall short, {@code onShortfall} undoes what it can and says what
     * it did.
     *
     * @throws ReplicaAcknowledgementException naming the shortfall and what was undone
     * @throws LeaseStoreException naming {@code what} if Redis fails or cannot be reached
     */
    <T> T write(
            String operation,
            String what,
            Function<RedisClusterCommands<String, String>, T> script,
            Predicate<T> wrote,
            Function<T, String> onShortfall) {
        StatefulRedisConnection<String, String> writer = writers.poll();
        boolean reusable = false;
        try {
            if (writer == null) {
                writer = writerFactory.get();
            }
            T result = script.apply(writer.sync());
            if (wrote.test(result)) {
                Shortfall shortfall = await(writer.sync());
                if (shortfall != null) {
                    String outcome;
                    try {
                        outcome = onShortfall.apply(result);
                    } catch (RedisException e) {
                        outcome = "undoing it failed too (" + e.getMessage() + ")";
                    }
                    reusable = true;
                    throw new ReplicaAcknowledgementException(
                            operation,
                            what,
                            ReplicaAcknowledgementException.detail(
                                    shortfall.what(),
                                    shortfall.required(),
                                    shortfall.acknowledged(),
                                    policy.timeout(),
                                    outcome),
                            shortfall.required(),
                            shortfall.acknowledged());
                }
            }
            reusable = true;
            return result;
        } catch (RedisException e) {
            throw new LeaseStoreException(operation, what, e);
        } finally {
            if (writer != null) {
                if (reusable && !closed) {
                    writers.push(writer);
                } else {
                    writer.close();
                }
            }
        }
    }

    /** Closes the pooled writer connections; a write still running closes its own when it ends. */
    void close() {
        closed = true;
        for (StatefulRedisConnection<String, String> writer; (writer = writers.poll()) != null; ) {
            writer.close();
        }
    }

    /** Null when every acknowledgement arrived, else what fell short. */
    private Shortfall await(RedisClusterCommands<String, String> commands) {
        int local = policy.local();
        int replicas = policy.replicas();
        long timeout = policy.timeout().toMillis();
        if (!policy.aof()) {
            long acknowledged = commands.waitForReplication(replicas, timeout);
            return acknowledged >= replicas
                    ? null
                    : new Shortfall("replicas (WAIT " + replicas + " " + timeout + ")", replicas, (int) acknowledged);
        }
        List<Object> reply = commands.dispatch(
                WAITAOF,
                new ArrayOutput<>(StringCodec.UTF8),
                new CommandArgs<>(StringCodec.UTF8).add(local).add(replicas).add(timeout));
        int localDone = (int) RedisReplies.asLong(reply.get(0));
        int replicasDone = (int) RedisReplies.asLong(reply.get(1));
        if (localDone >= local && replicasDone >= replicas) {
            return null;
        }
        String command = "WAITAOF " + local + " " + replicas + " " + timeout;
        return localDone < local
                ? new Shortfall("local AOF fsyncs (" + command + ")", local, localDone)
                : new Shortfall("replica AOF fsyncs (" + command + ")", replicas, replicasDone);
    }
}
