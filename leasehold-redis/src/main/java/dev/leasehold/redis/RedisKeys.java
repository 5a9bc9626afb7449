package dev.leasehold.redis;

import dev.leasehold.LockKey;

/**
 * Names the Redis keys and channel of one lock. All three carry the rendered lock key as their
 * hash tag, so in a cluster they live in one slot and a script can touch them together:
 *
 * <pre>
 * {prefix}{borrow:t42:B1}           lease hash {owner, fence}, with the lease's TTL
 * {prefix}{borrow:t42:B1}:fence     fence counter, kept fenceCounterTtl after the last grant
 * {prefix}{borrow:t42:B1}:released  pub/sub channel for wake-ups
 * {prefix}force-released            pub/sub channel of every force-release, for holders anywhere
 * </pre>
 *
 * {@link LockKey} forbids braces in its parts, so the tag is exactly the rendered key.
 */
final class RedisKeys {

    private final String prefix;

    RedisKeys(String prefix) {
        this.prefix = prefix;
    }

    String lease(LockKey key) {
        return prefix + "{" + key.render() + "}";
    }

    String fence(LockKey key) {
        return lease(key) + ":fence";
    }

    String channel(LockKey key) {
        return lease(key) + ":released";
    }

    String forceReleaseChannel() {
        return prefix + "force-released";
    }
}
