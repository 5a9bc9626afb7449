package dev.leasehold.jdbc;

import dev.leasehold.LockKey;
import dev.leasehold.jdbc.SqlDialect.Op;
import dev.leasehold.spi.AcquireRequest;
import dev.leasehold.spi.AcquireResult;
import dev.leasehold.spi.WaiterPolicy;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.time.Duration;
import java.util.HexFormat;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

/**
 * This store's side of the waiter queue ({@code leasehold_waiter}): which owner tokens were told
 * "busy" and since when, when a refused caller takes a place ({@link WaiterPolicy}), the queue's
 * statements, and how long a queued caller waits before asking again (told through the busy
 * answer's holder time). A single try never takes a place and leaves nothing in memory. The
 * pacing of queued callers per database is in {@code docs/design/sql.md}.
 */
final class WaiterQueue {

    /** The queue TTL without fair mode. */
    static final Duration DEFAULT_TTL = Duration.ofSeconds(2);

    /** How long a caller is refused before it takes a place, without fair mode. */
    static final Duration DEFAULT_BARGING_BOUND = Duration.ofMillis(50);

    private static final long STEP_NANOS = TimeUnit.MILLISECONDS.toNanos(2);
    private static final int MEMORY = 4096;

    /** This store instance, named in its places so that a hand-off notification wakes only it. */
    final String wake;

    final boolean fair;
    final long ttlMillis;
    private final long ttlNanos;
    private final long boundNanos;
    private final WaiterPolicy policy;
    private final long pollNanos;
    private final ConcurrentHashMap<Place, Asked> asked = new ConcurrentHashMap<>(); // by key and owner, as places
    /**
     * The places this store took that may still be live, by key and owner (an owner token may wait
     * for one key while it holds or releases another), with when their last join was sent ({@link
     * System#nanoTime}); dropped once the place is deleted, or once its TTL has certainly run out.
     */
    private final ConcurrentHashMap<Place, Long> places = new ConcurrentHashMap<>();

    /** One owner's place in one key's queue. */
    private record Place(String key, String owner) {}

    private final AtomicLong lastPurge = new AtomicLong(System.nanoTime());
    private final StoreCalls calls;
    private final String holder;

    /** A refused owner: when it was first refused, and when its place was last renewed (0: none). */
    private static final class Asked {
        final long firstRefused;
        long refreshed; // guarded by this
        long headSince; // guarded by this; 0 unless last seen at the head

        Asked(long firstRefused) {
            this.firstRefused = firstRefused;
        }

        synchronized long lastRefresh() {
            return refreshed;
        }
    }

    /** What to do after a refusal: take or renew the place ({@code join}), and whether it is new. */
    record Plan(boolean queued, boolean join, boolean fresh, long waitNanos) {}

    WaiterQueue(
            StoreCalls calls, String holder, boolean fair, Duration ttl, Duration bargingBound, Duration pollInterval) {
        this.calls = calls;
        this.holder = holder;
        byte[] id = new byte[8];
        ThreadLocalRandom.current().nextBytes(id);
        this.wake = HexFormat.of().formatHex(id);
        this.fair = fair;
        this.ttlMillis = ttl.toMillis();
        this.ttlNanos = ttl.toNanos();
        this.boundNanos = bargingBound.toNanos();
        this.policy = fair ? WaiterPolicy.fairQueue() : WaiterPolicy.bargingFor(bargingBound);
        this.pollNanos = pollInterval.toNanos();
    }

    /** The owner was granted the key: ends its place, where the dialect's acquire does not do that itself. */
    void afterGrant(LockKey key, String owner) {
        if (granted(key.render(), owner) && calls.dialect.has(Op.FORGET)) {
            calls.execute("acquire", key, c -> calls.update(c, Op.FORGET, StoreCalls.keyAndOwner(key, owner)));
            places.remove(new Place(key.render(), owner));
        }
    }

    /**
     * Whether the owner may still hold a live place in the key's queue that this store took for
     * it: one joined less than twice its TTL ago and not deleted since. An owner that never queued
     * for the key here has none; its acquire and release need not look for one ({@link
     * Op#ACQUIRE_UNQUEUED}, {@link Op#RELEASE_UNQUEUED}).
     */
    boolean mayHavePlace(String key, String owner) {
        if (places.isEmpty()) {
            return false;
        }
        Place place = new Place(key, owner);
        Long joined = places.get(place);
        if (joined == null) {
            return false;
        }
        if (System.nanoTime() - joined < 2 * ttlNanos) {
            return true;
        }
        places.remove(place, joined);
        return false;
    }

    /** The owner's place in the key's queue, if it had one, was deleted or ended (by a release or a leave). */
    void placeEnded(String key, String owner) {
        if (!places.isEmpty()) {
            places.remove(new Place(key, owner));
        }
    }

    /**
     * A refused caller: takes or renews its place in the key's queue when it is due one, and is
     * told when to ask again.
     */
    AcquireResult.Busy busy(LockKey key, String owner, AcquireResult.Busy busy, AcquireRequest request) {
        long now = System.nanoTime();
        long holderNanos = busy.holderRemaining().toNanos();
        Plan plan = refused(key.render(), owner, now, holderNanos, request);
        if (!plan.queued()) {
            return plan.waitNanos() == holderNanos ? busy : new AcquireResult.Busy(Duration.ofNanos(plan.waitNanos()));
        }
        if (plan.join()) {
            // noted before the join is sent: a join that fails may still have taken the place
            places.put(new Place(key.render(), owner), now);
        }
        long ahead = calls.execute("queue", key, connection -> {
            if (plan.fresh() && calls.dialect.has(Op.CLEANUP)) {
                calls.update(connection, Op.CLEANUP, Map.of("key", key.render()));
            }
            if (plan.join()) {
                calls.update(
                        connection,
                        Op.JOIN,
                        Map.of(
                                "key",
                                key.render(),
                                "owner",
                                owner,
                                "queue_ms",
                                ttlMillis,
                                "holder",
                                holder,
                                "wake",
                                wake));
            }
            if (!calls.dialect.has(Op.POSITION)) {
                return -1L;
            }
            try (PreparedStatement statement =
                            calls.prepare(connection, Op.POSITION, StoreCalls.keyAndOwner(key, owner));
                    ResultSet row = statement.executeQuery()) {
                return row.next() ? row.getLong(1) : 0L;
            }
        });
        return new AcquireResult.Busy(Duration.ofNanos(queuedWait(key.render(), owner, now, plan, ahead)));
    }

    /**
     * Drops the owner's place and hands a key that a release gave it meanwhile on to the next live
     * waiter (or frees it), in one call.
     */
    void leave(LockKey key, String owner) {
        forget(key.render(), owner);
        Map<String, Object> values = StoreCalls.keyAndOwner(key, owner);
        calls.execute("leave the queue", key, connection -> {
            if (calls.dialect.has(Op.LEAVE)) {
                try (PreparedStatement statement = calls.prepare(connection, Op.LEAVE, values)) {
                    statement.execute();
                }
                return null;
            }
            // First the place, so that a release from now on passes this waiter over; then a key
            // that was handed to it before.
            calls.update(connection, Op.FORGET, values);
            calls.update(connection, Op.RELEASE, values);
            return null;
        });
        places.remove(new Place(key.render(), owner));
    }

    /** The owner was granted the key: whether it had a place in the queue (which its grant ends). */
    private boolean granted(String key, String owner) {
        Asked a = asked.remove(new Place(key, owner));
        return a != null && a.lastRefresh() != 0;
    }

    /** The owner's wait ended without the key: it is no longer asking. */
    void forget(String key, String owner) {
        asked.remove(new Place(key, owner));
    }

    /**
     * The owner was refused, with the holder's remaining time: whether and how it queues. The first
     * refusal carries the holder's real time, except in fair mode, where the caller is told to ask
     * again at once, to take its place. Without fair mode a later refusal tells it to come back by
     * the end of the barging bound, when it takes its place; a release that frees the key wakes it
     * sooner. A hand-off wakes only the store of the waiter it went to.
     */
    Plan refused(String key, String owner, long now, long holderNanos, AcquireRequest request) {
        if (request != null) {
            return refused(key, request, now, holderNanos);
        }
        Place place = new Place(key, owner);
        Asked a = asked.get(place);
        if (a == null) {
            purgeIfFull(now);
            asked.putIfAbsent(place, new Asked(now));
            return new Plan(false, false, false, fair ? 0 : holderNanos);
        }
        synchronized (a) {
            long refusedFor = now - a.firstRefused;
            if (a.refreshed == 0 && !fair && refusedFor < boundNanos) {
                return new Plan(false, false, false, Math.min(holderNanos, boundNanos - refusedFor));
            }
            boolean fresh = a.refreshed == 0;
            boolean join = fresh || now - a.refreshed > ttlNanos / 4;
            if (join) {
                a.refreshed = now;
            }
            return new Plan(true, join, fresh, Math.min(holderNanos, ttlNanos / 3));
        }
    }

    /**
     * A refused caller that said whether it waits ({@link WaiterPolicy}): a single try is told the
     * holder's time and leaves nothing behind; a waiter not yet due a place is told to ask again by
     * the time it is; a waiter due one takes it, or renews it when a quarter of its TTL has passed.
     */
    private Plan refused(String key, AcquireRequest request, long now, long holderNanos) {
        if (!request.waiting()) {
            return new Plan(false, false, false, holderNanos);
        }
        Place place = new Place(key, request.owner());
        Asked a = asked.get(place);
        if (!policy.takesPlace(request) && (a == null || a.lastRefresh() == 0)) {
            return new Plan(
                    false,
                    false,
                    false,
                    Math.min(holderNanos, Math.max(1, policy.untilPlace(request).toNanos())));
        }
        if (a == null) {
            purgeIfFull(now);
            a = asked.computeIfAbsent(place, p -> new Asked(now));
        }
        synchronized (a) {
            boolean fresh = a.refreshed == 0;
            boolean join = fresh || now - a.refreshed > ttlNanos / 4;
            if (join) {
                a.refreshed = now;
            }
            return new Plan(true, join, fresh, Math.min(holderNanos, ttlNanos / 3));
        }
    }

    /**
     * How long a queued owner waits before asking again, given how many live waiters are ahead of
     * it ({@code -1}: not known, the waiter is woken by a notification).
     */
    long queuedWait(String key, String owner, long now, Plan plan, long ahead) {
        if (ahead < 0) {
            // PostgreSQL: the hand-off's notification wakes the waiter it went to, so a queued
            // waiter asks again only to keep its place alive, within a third of the place's TTL
            // (and the lock service asks at least once per its longest poll, which bounds what a
            // lost notification costs): asking every poll interval cost a statement per waiter
            // every 50 ms on a key held for long.
            return plan.waitNanos();
        }
        Asked a = asked.get(new Place(key, owner));
        if (ahead > 0 || a == null) {
            if (a != null) {
                synchronized (a) {
                    a.headSince = 0;
                }
            }
            return Math.min(plan.waitNanos(), Math.max(1, ahead) * STEP_NANOS);
        }
        long asHead;
        synchronized (a) {
            if (a.headSince == 0) {
                a.headSince = now;
            }
            asHead = now - a.headSince;
        }
        // At the head: at once at first, then slower while the key stays held, up to the poll interval.
        return Math.min(plan.waitNanos(), Math.min(pollNanos, asHead / 4));
    }

    private void purgeIfFull(long now) {
        if (places.size() >= MEMORY) {
            // places whose TTL has certainly run out; a live one is never forgotten
            places.values().removeIf(joined -> now - joined >= 2 * ttlNanos);
        }
        long last = lastPurge.get();
        if (asked.size() >= MEMORY && now - last > ttlNanos / 4 && lastPurge.compareAndSet(last, now)) {
            // single tries that never came back, waits given up: forget those older than a queue TTL
            long horizon = Math.max(ttlNanos, boundNanos) * 2;
            asked.values().removeIf(a -> now - Math.max(a.firstRefused, a.lastRefresh()) > horizon);
        }
    }
}
