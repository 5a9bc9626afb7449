package dev.leasehold.redis;

import static dev.leasehold.redis.RedisReplies.asLong;
import static dev.leasehold.redis.RedisReplies.instant;

import dev.leasehold.LeaseInfo;
import dev.leasehold.LeaseStoreException;
import dev.leasehold.LockKey;
import io.lettuce.core.RedisException;
import io.lettuce.core.ScanArgs;
import io.lettuce.core.ScanIterator;
import io.lettuce.core.ScriptOutputType;
import io.lettuce.core.cluster.api.sync.RedisClusterCommands;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.Optional;
import java.util.TreeSet;
import java.util.function.Supplier;

/** The reads of a {@link RedisLeaseStore} for operators: one lease, the leases of a namespace. */
final class RedisReads {

    static final Script INSPECT = Script.load("inspect");

    private final RedisClusterCommands<String, String> redis;
    private final RedisKeys keys;

    RedisReads(RedisClusterCommands<String, String> redis, RedisKeys keys) {
        this.redis = redis;
        this.keys = keys;
    }

    Optional<LeaseInfo> inspect(LockKey key) {
        Objects.requireNonNull(key, "key is missing (null)");
        List<Object> reply = call(
                "inspect",
                key.render(),
                () -> INSPECT.run(redis, ScriptOutputType.MULTI, new String[] {keys.lease(key)}));
        if (reply.isEmpty()) {
            return Optional.empty();
        }
        Duration remaining = Duration.ofMillis(Math.max(0, asLong(reply.get(2))));
        Instant now = instant(reply.get(3), reply.get(4));
        return Optional.of(
                new LeaseInfo(key, (String) reply.get(0), asLong(reply.get(1)), remaining, now.plus(remaining)));
    }

    /** Scans for lease keys (SCAN, every node of a cluster), then inspects each one. */
    List<LeaseInfo> list(String namespace, int limit) {
        Objects.requireNonNull(namespace, "namespace is missing (null)");
        if (limit < 1 || limit > 10_000) {
            throw new IllegalArgumentException("limit must be between 1 and 10000, was " + limit);
        }
        TreeSet<String> rendered = new TreeSet<>();
        try {
            for (String pattern : keys.leasePatterns(namespace)) {
                ScanIterator<String> scan = ScanIterator.scan(
                        redis, ScanArgs.Builder.matches(pattern).limit(500));
                while (scan.hasNext() && rendered.size() < limit) {
                    rendered.add(keys.rendered(scan.next()));
                }
            }
        } catch (RedisException e) {
            throw new LeaseStoreException("list", namespace + ":*", e);
        }
        List<LeaseInfo> leases = new ArrayList<>();
        for (String key : rendered) {
            inspect(LockKey.parse(key)).ifPresent(leases::add);
        }
        return leases;
    }

    /** Runs a command; a Redis failure is a {@link LeaseStoreException} naming the operation and key. */
    static <T> T call(String operation, String key, Supplier<T> command) {
        try {
            return command.get();
        } catch (RedisException e) {
            throw new LeaseStoreException(operation, key, e);
        }
    }
}
