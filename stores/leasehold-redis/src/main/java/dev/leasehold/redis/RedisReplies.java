package dev.leasehold.redis;

import dev.leasehold.spi.AcquireResult;
import dev.leasehold.spi.Grant;
import java.time.Duration;
import java.time.Instant;
import java.util.List;

/** Reads the replies of this package's scripts: numbers, server times and grants. */
final class RedisReplies {

    private RedisReplies() {}

    /**
     * An acquire script's reply: {@code {1, fence, ttl_ms, time_s, time_us, new}} granted, {@code
     * {0, wait_ms}} busy.
     */
    static AcquireResult acquireResult(List<Object> reply) {
        if (asLong(reply.get(0)) == 1) {
            return new AcquireResult.Granted(grant(reply, 1));
        }
        return new AcquireResult.Busy(Duration.ofMillis(Math.max(0, asLong(reply.get(1)))));
    }

    /** The grant at {@code from}: fence, TTL in ms, server time in seconds and microseconds. */
    static Grant grant(List<Object> reply, int from) {
        long fence = asLong(reply.get(from));
        Duration remaining = Duration.ofMillis(asLong(reply.get(from + 1)));
        Instant now = instant(reply.get(from + 2), reply.get(from + 3));
        return new Grant(fence, remaining, now.plus(remaining));
    }

    /** A server time, as {@code TIME} gives it. */
    static Instant instant(Object seconds, Object micros) {
        return Instant.ofEpochSecond(asLong(seconds), asLong(micros) * 1000);
    }

    static long asLong(Object value) {
        if (value instanceof Long number) {
            return number;
        }
        return Long.parseLong(String.valueOf(value));
    }
}
