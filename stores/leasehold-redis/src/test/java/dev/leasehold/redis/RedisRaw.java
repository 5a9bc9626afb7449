package dev.leasehold.redis;

import dev.leasehold.testkit.RawLease;
import io.lettuce.core.KeyValue;
import io.lettuce.core.api.sync.RedisHashCommands;
import java.util.List;
import java.util.Optional;

/** Reads a lease hash straight from Redis, for the conformance suite's raw-state probe. */
final class RedisRaw {

    private RedisRaw() {}

    static Optional<RawLease> read(RedisHashCommands<String, String> redis, String leaseKey) {
        List<KeyValue<String, String>> fields = redis.hmget(leaseKey, "owner", "fence");
        if (!fields.get(0).hasValue()) {
            return Optional.empty();
        }
        return Optional.of(new RawLease(
                fields.get(0).getValue(), Long.parseLong(fields.get(1).getValue())));
    }
}
