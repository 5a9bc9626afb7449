package dev.leasehold.redis;

import dev.leasehold.LeaseStoreException;
import io.lettuce.core.RedisException;
import io.lettuce.core.cluster.api.sync.RedisClusterCommands;
import java.util.function.Function;
import java.util.function.Predicate;

/**
 * Runs the scripts of a {@link RedisLeaseStore} that may write: on the store's shared connection,
 * or, with a replica acknowledgement configured, through it. Thread-safe.
 */
final class RedisWrites {

    private final RedisClusterCommands<String, String> redis;
    private final ReplicaAcknowledgement acknowledgement; // null: writes are not waited for

    RedisWrites(RedisClusterCommands<String, String> redis, ReplicaAcknowledgement acknowledgement) {
        this.redis = redis;
        this.acknowledgement = acknowledgement;
    }

    /** Whether writes wait for acknowledgements (and so block a connection of their own). */
    boolean acknowledged() {
        return acknowledgement != null;
    }

    /**
     * Runs {@code script}; with an acknowledgement, waits for it when {@code wrote} says the
     * script wrote, and on a shortfall lets {@code onShortfall} undo what it can and say what it
     * did.
     *
     * @throws ReplicaAcknowledgementException when the acknowledgements fall short
     * @throws LeaseStoreException naming {@code what} if Redis fails or cannot be reached
     */
    <T> T write(
            String operation,
            String what,
            Function<RedisClusterCommands<String, String>, T> script,
            Predicate<T> wrote,
            Function<T, String> onShortfall) {
        if (acknowledgement != null) {
            return acknowledgement.write(operation, what, script, wrote, onShortfall);
        }
        try {
            return script.apply(redis);
        } catch (RedisException e) {
            throw new LeaseStoreException(operation, what, e);
        }
    }

    /** Closes the writer connections of the acknowledgement, if any. */
    void close() {
        if (acknowledgement != null) {
            acknowledgement.close();
        }
    }
}
