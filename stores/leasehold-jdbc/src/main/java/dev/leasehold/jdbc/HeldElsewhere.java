package dev.leasehold.jdbc;

import java.time.Duration;
import java.util.concurrent.ConcurrentHashMap;

/**
 * Keys this store was recently told are held by another owner, and until when by this process's
 * clock: an acquire of such a key first reads the row without locking it ({@code INSPECT}) and
 * refuses on what it reads, so that a busy try costs the server a plain read instead of a write
 * that locks the row to change nothing. Only a hint: a key it names that turns out free, expired
 * or the caller's own is taken by the usual acquire statement (one read more, once), and a key it
 * does not name costs nothing. At most {@value #LIMIT} keys; forgotten all at once beyond that.
 * Thread-safe.
 */
final class HeldElsewhere {

    static final int LIMIT = 4096;

    private final ConcurrentHashMap<String, Long> until = new ConcurrentHashMap<>();

    /** Whether {@code key} was last seen held by another owner whose lease has not ended since. */
    boolean probablyHeld(String key) {
        if (until.isEmpty()) {
            return false;
        }
        Long end = until.get(key);
        if (end == null) {
            return false;
        }
        if (System.nanoTime() - end < 0) {
            return true;
        }
        until.remove(key, end);
        return false;
    }

    /** {@code key} is held by another owner for {@code remaining} more (nothing is noted for zero). */
    void held(String key, Duration remaining) {
        if (remaining.isZero() || remaining.isNegative()) {
            return;
        }
        if (until.size() >= LIMIT) {
            until.clear();
        }
        until.put(key, System.nanoTime() + remaining.toNanos());
    }

    /** {@code key} was granted or released here: not held by another owner as far as this store knows. */
    void free(String key) {
        if (!until.isEmpty()) {
            until.remove(key);
        }
    }
}
