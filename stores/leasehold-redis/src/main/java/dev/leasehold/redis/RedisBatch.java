package dev.leasehold.redis;

import static dev.leasehold.redis.RedisReplies.asLong;
import static dev.leasehold.redis.RedisReplies.instant;

import dev.leasehold.LockKey;
import dev.leasehold.spi.BatchAcquireResult;
import dev.leasehold.spi.Grant;
import io.lettuce.core.RedisException;
import io.lettuce.core.ScriptOutputType;
import io.lettuce.core.cluster.SlotHash;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.BiConsumer;
import java.util.function.Function;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The batch acquire of a {@link RedisLeaseStore}, in either mode: one {@code acquire-all} script
 * per slot among the batch's keys (one for the whole batch off a cluster), each granting all its
 * keys or none; when a later slot's key is busy, what the earlier scripts granted is released
 * again, so the batch is all or nothing. Thread-safe.
 */
final class RedisBatch {

    static final Script ACQUIRE_ALL = Script.joined("acquire-all", "fence", "queue", "acquire-all");

    private static final Logger log = LoggerFactory.getLogger(RedisBatch.class);

    private final RedisWrites writes;
    private final RedisKeys keys;
    private final boolean cluster;
    private final String counterTtl;
    private final BiConsumer<LockKey, String> release;

    /** @param release releases a key of the owner's, handing it to a queued waiter if there is one */
    RedisBatch(
            RedisWrites writes,
            RedisKeys keys,
            boolean cluster,
            String counterTtl,
            BiConsumer<LockKey, String> release) {
        this.writes = writes;
        this.keys = keys;
        this.cluster = cluster;
        this.counterTtl = counterTtl;
        this.release = release;
    }

    /** The batch for {@code millis} ms; the caller has checked the batch, the owner and the lease length. */
    BatchAcquireResult acquire(List<LockKey> batch, String owner, Duration leaseFor, String millis) {
        Map<LockKey, Grant> grants = new HashMap<>();
        List<LockKey> fresh = new ArrayList<>();
        for (List<LockKey> group : groupsBySlot(batch)) {
            List<Object> reply;
            try {
                reply = acquireGroup(group, owner, millis);
            } catch (RuntimeException e) {
                // An acknowledgement shortfall has already undone the group's new grants and kept
                // what the owner held before. Any other failure leaves the group's outcome unknown:
                // its keys are not released, since one may be a lease the owner held before the
                // call (a re-entry); a grant the caller was not told of expires with leaseFor, as
                // after a single acquire whose reply is lost. The earlier groups' new grants are
                // known, and released.
                releaseQuietly(fresh, owner, e);
                throw e;
            }
            if (asLong(reply.get(0)) == 0) {
                releaseQuietly(fresh, owner, null);
                LockKey busy = group.get((int) asLong(reply.get(1)) - 1);
                return new BatchAcquireResult.Busy(busy, Duration.ofMillis(Math.max(0, asLong(reply.get(2)))));
            }
            Instant now = instant(reply.get(1), reply.get(2));
            for (int i = 0; i < group.size(); i++) {
                grants.put(group.get(i), new Grant(asLong(reply.get(3 + 2 * i)), leaseFor, now.plus(leaseFor)));
                if (asLong(reply.get(4 + 2 * i)) == 1) {
                    fresh.add(group.get(i));
                }
            }
        }
        return new BatchAcquireResult.Granted(batch.stream().map(grants::get).toList());
    }

    /** The batch's keys by slot on a cluster, in the order of their first key; else one group. */
    private List<List<LockKey>> groupsBySlot(List<LockKey> batch) {
        return groupsBySlot(batch, key -> key, keys, cluster);
    }

    /** The items by the slot of their key on a cluster, in the order of their first item; else one group. */
    static <T> List<List<T>> groupsBySlot(List<T> items, Function<T, LockKey> key, RedisKeys keys, boolean cluster) {
        if (!cluster) {
            return List.of(items);
        }
        Map<Integer, List<T>> bySlot = new LinkedHashMap<>();
        for (T item : items) {
            bySlot.computeIfAbsent(SlotHash.getSlot(keys.lease(key.apply(item))), slot -> new ArrayList<>())
                    .add(item);
        }
        return List.copyOf(bySlot.values());
    }

    private List<Object> acquireGroup(List<LockKey> group, String owner, String millis) {
        String[] scriptKeys = new String[group.size() * 4];
        for (int i = 0; i < group.size(); i++) {
            System.arraycopy(RedisWaiterQueue.keys(keys, group.get(i)), 0, scriptKeys, 4 * i, 4);
        }
        String what = group.size() == 1
                ? group.get(0).render()
                : group.size() + " keys " + group.get(0) + " .. " + group.get(group.size() - 1);
        return writes.write(
                "acquire",
                what,
                commands -> ACQUIRE_ALL.run(commands, ScriptOutputType.MULTI, scriptKeys, owner, millis, counterTtl),
                granted -> asLong(granted.get(0)) == 1,
                granted -> {
                    List<LockKey> grantedNew = new ArrayList<>();
                    for (int i = 0; i < group.size(); i++) {
                        if (asLong(granted.get(4 + 2 * i)) == 1) {
                            grantedNew.add(group.get(i));
                        }
                    }
                    releaseQuietly(grantedNew, owner, null);
                    return grantedNew.size() == group.size()
                            ? "the grants were released again"
                            : "the new grants were released again, leases held before by the same owner are kept";
                });
    }

    /** Releases the keys, in reverse; failures are added to {@code failure} or logged. */
    private void releaseQuietly(List<LockKey> taken, String owner, Throwable failure) {
        for (int i = taken.size() - 1; i >= 0; i--) {
            try {
                release.accept(taken.get(i), owner);
            } catch (RedisException e) {
                if (failure != null) {
                    failure.addSuppressed(e);
                } else {
                    log.warn("releasing {} of a refused batch failed; it expires with its lease", taken.get(i), e);
                }
            }
        }
    }
}
