package dev.leasehold.redis;

import dev.leasehold.LeaseStoreException;
import dev.leasehold.LockKey;
import dev.leasehold.spi.AcquireRequest;
import dev.leasehold.spi.AcquireResult;
import dev.leasehold.spi.WaiterPolicy;
import io.lettuce.core.RedisException;
import io.lettuce.core.api.async.BaseRedisAsyncCommands;
import io.lettuce.core.api.sync.BaseRedisCommands;
import io.lettuce.core.cluster.api.async.RedisClusterAsyncCommands;
import io.lettuce.core.cluster.api.sync.RedisClusterCommands;
import io.lettuce.core.codec.StringCodec;
import io.lettuce.core.output.CommandOutput;
import io.lettuce.core.output.IntegerOutput;
import io.lettuce.core.output.NestedMultiOutput;
import java.time.Duration;
import java.util.HexFormat;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Supplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The per-key waiter queue of a {@link RedisLeaseStore}, in one of two modes: the fair mode, the default
 * ({@link RedisLeaseStore.Builder#fairQueue}), and bounded barging ({@link
 * RedisLeaseStore.Builder#bargingBound}); when a waiter takes a place is {@link WaiterPolicy}'s
 * rule. A single try never takes a place.
 * A release hands the key to the first live waiter in the same script and wakes only that
 * waiter's store; the wake-up carries the grant, which this class keeps for the waiter's next
 * acquire. Keys, messages and the reasoning are in {@code docs/design/redis.md}. Thread-safe.
 */
final class RedisWaiterQueue {

    static final Script ACQUIRE = Script.joined("fair-acquire", "fence", "queue", "fair-acquire");
    static final Script RELEASE = Script.joined("fair-release", "fence", "queue", "fair-release");
    /** The bounded barging mode's scripts. */
    static final Script BARGING_ACQUIRE = Script.joined("acquire", "fence", "queue", "acquire");

    static final Script BARGING_RELEASE = Script.joined("release", "fence", "queue", "release");

    /** The acquire scripts' keys, after the lease key: fence counter, queue, queue entries. */
    private static final byte[][] ACQUIRE_KEYS = {
        ScriptArgs.suffix(""),
        ScriptArgs.suffix(RedisKeys.FENCE),
        ScriptArgs.suffix(":queue"),
        ScriptArgs.suffix(":waiters")
    };
    /** The release scripts' keys: the acquire scripts' and the listening mark. */
    private static final byte[][] RELEASE_KEYS = {
        ACQUIRE_KEYS[0], ACQUIRE_KEYS[1], ACQUIRE_KEYS[2], ACQUIRE_KEYS[3], ScriptArgs.suffix(RedisKeys.LISTENING)
    };

    private static final Script.Heads ACQUIRE_HEADS = ACQUIRE.heads(ACQUIRE_KEYS.length);
    private static final Script.Heads RELEASE_HEADS = RELEASE.heads(RELEASE_KEYS.length);
    private static final Script.Heads BARGING_ACQUIRE_HEADS = BARGING_ACQUIRE.heads(ACQUIRE_KEYS.length);
    private static final Script.Heads BARGING_RELEASE_HEADS = BARGING_RELEASE.heads(RELEASE_KEYS.length);

    private static final Supplier<CommandOutput<String, String, List<Object>>> MULTI =
            () -> new NestedMultiOutput<>(StringCodec.UTF8);
    private static final Supplier<CommandOutput<String, String, Long>> INTEGER =
            () -> new IntegerOutput<>(StringCodec.UTF8);

    private static final Logger log = LoggerFactory.getLogger(RedisWaiterQueue.class);
    private static final int MEMORY = 4096;

    private final String wakeChannel;
    private final boolean sharded;

    private final String queueTtlMillis;
    private final long queueTtlNanos;
    private final WaiterPolicy policy;
    private final boolean pushedGrants;
    /** Owners told "busy", with when they were first and last told so: their next ask keeps (or takes) a place. */
    private final ConcurrentHashMap<String, Asked> asked = new ConcurrentHashMap<>();
    /** Hand-offs announced to this store, by the SHA-1 of the waiter's token. */
    private final ConcurrentHashMap<String, Pushed> pushed = new ConcurrentHashMap<>();

    private final AtomicLong lastPurge = new AtomicLong(System.nanoTime());

    /** When an owner was first told "busy" (of this wait: it asks with one token), and when it last asked. */
    private record Asked(long first, long last) {}

    /** A hand-off announced by a wake-up, not yet taken. */
    private record Pushed(String keyChannel, long fence, long grantedAtMicros, long ttlMillis, long receivedNanos) {}

    /** @param policy when a refused waiter takes a place, and which mode's scripts run */
    RedisWaiterQueue(String keyPrefix, Duration queueTtl, boolean pushedGrants, boolean sharded, WaiterPolicy policy) {
        this.sharded = sharded;
        this.policy = policy;
        byte[] id = new byte[8];
        ThreadLocalRandom.current().nextBytes(id);
        this.wakeChannel = keyPrefix + "wake:" + HexFormat.of().formatHex(id);
        this.queueTtlMillis = Long.toString(queueTtl.toMillis());
        this.queueTtlNanos = queueTtl.toNanos();
        this.pushedGrants = pushedGrants;
    }

    /** The fair mode (the default); else bounded barging. */
    boolean fair() {
        return policy.fair();
    }

    /** The pub/sub channel on which this store's waiters are handed keys (unless {@link #sharded}). */
    String wakeChannel() {
        return wakeChannel;
    }

    /** Whether messages are shard messages: each waiter is then woken on its key's channel. */
    boolean sharded() {
        return sharded;
    }

    /**
     * Drops an announced hand-off that a force-release removed (a key channel's {@code f:<fence>} or
     * the store-wide {@code <fence>:<key>}, named by the removed grant's fence): its waiter then asks
     * Redis instead of taking a grant that no longer exists.
     */
    void forgetForced(String message) {
        if (pushed.isEmpty() || message.startsWith("r:")) {
            return; // nothing announced, or an ordinary release
        }
        String fence = message.startsWith("f:")
                ? message.substring(2)
                : message.indexOf(':') > 0 ? message.substring(0, message.indexOf(':')) : null;
        if (fence == null) {
            return;
        }
        try {
            long forced = Long.parseLong(fence);
            pushed.values().removeIf(p -> p.fence() == forced);
        } catch (NumberFormatException e) {
            // not a force-release notice
        }
    }

    /**
     * Forgets a waiter that gave up, drops its place, and gives a key handed to it to the next
     * waiter (a release, which does nothing unless the key is the waiter's). On asynchronous
     * commands it only sends, so later commands of the store reach Redis after it, and a failure
     * is logged; with a replica acknowledgement it is a write that is waited for like a grant.
     *
     * @param async the store's asynchronous commands, or null
     * @throws ReplicaAcknowledgementException when the acknowledgement falls short
     * @throws LeaseStoreException naming the key if Redis fails or cannot be reached
     */
    void leave(
            RedisWrites writes,
            RedisClusterCommands<String, String> redis,
            RedisClusterAsyncCommands<String, String> async,
            RedisKeys keys,
            LockKey key,
            String owner,
            String counterTtl) {
        forget(owner);
        String[] queueKeys = keys(keys, key);
        if (writes.acknowledged()) {
            writes.write(
                    "leave the queue",
                    key.render(),
                    commands -> {
                        commands.zrem(queueKeys[2], owner);
                        commands.hdel(queueKeys[3], owner);
                        return release(commands, keys, key, owner, counterTtl);
                    },
                    released -> true,
                    released -> "the leave stays on the master");
            return;
        }
        if (async == null) {
            try {
                redis.zrem(queueKeys[2], owner);
                redis.hdel(queueKeys[3], owner);
            } catch (RedisException e) {
                throw new LeaseStoreException("leave the queue", key.render(), e);
            }
            try {
                release(redis, keys, key, owner, counterTtl);
            } catch (RedisException e) {
                throw new LeaseStoreException("release", key.render(), e);
            }
            return;
        }
        try {
            async.zrem(queueKeys[2], owner);
            async.hdel(queueKeys[3], owner);
            releaseAsync(async, keys, key, owner, counterTtl).whenComplete((released, failure) -> {
                if (failure != null) {
                    log.debug("could not leave the queue of {}; the place ends at its queue TTL", key, failure);
                }
            });
        } catch (RedisException e) {
            throw new LeaseStoreException("leave the queue", key.render(), e);
        }
    }

    /** Forgets what this store knew of a waiter that gave up: its asks and a hand-off announced to it. */
    void forget(String owner) {
        asked.remove(owner);
        if (!pushed.isEmpty()) {
            pushed.remove(Script.sha1(owner));
        }
    }

    static String[] keys(RedisKeys keys, LockKey key) {
        String lease = keys.lease(key);
        return new String[] {lease, lease + RedisKeys.FENCE, lease + ":queue", lease + ":waiters"};
    }

    /**
     * One acquire's ask: what was known before the script, and the script's arguments. {@code
     * untilPlace} is how long until a refused waiter is due a place; {@code waiting} whether it will
     * ask again (only a waiter holds a place).
     */
    private record Ask(
            String owner,
            long sent,
            Asked before,
            boolean join,
            boolean waiting,
            Duration untilPlace,
            boolean remember,
            List<Object> pushed) {}

    List<Object> acquire(
            BaseRedisCommands<String, String> redis,
            RedisKeys keys,
            LockKey key,
            String owner,
            String millis,
            String counterTtl,
            boolean waitedFor,
            AcquireRequest request) {
        Ask ask = ask(keys, key, owner, millis, waitedFor, request);
        if (ask.pushed() != null) {
            return ask.pushed();
        }
        return answered(
                ask,
                acquireScript()
                        .run(redis, MULTI, acquireHeads(), acquireArgs(keys.lease(key), ask, millis, counterTtl)));
    }

    /**
     * {@link #acquire} with the script sent on asynchronous commands: no thread waits for the
     * reply, which becomes the result on the client's I/O thread in the step that receives it.
     */
    CompletionStage<AcquireResult> acquireAsync(
            BaseRedisAsyncCommands<String, String> redis,
            RedisKeys keys,
            LockKey key,
            String owner,
            String millis,
            String counterTtl,
            AcquireRequest request) {
        Ask ask = ask(keys, key, owner, millis, false, request);
        if (ask.pushed() != null) {
            return CompletableFuture.completedFuture(RedisReplies.acquireResult(ask.pushed()));
        }
        return acquireScript()
                .runAsync(
                        redis,
                        MULTI,
                        acquireHeads(),
                        acquireArgs(keys.lease(key), ask, millis, counterTtl),
                        reply -> RedisReplies.acquireResult(answered(ask, reply)));
    }

    /**
     * What to ask: whether the caller takes a place is the {@link WaiterPolicy}'s answer for its
     * request. Without a request (a direct caller of the store's three-argument acquire), one is
     * inferred: a repeated owner token is a waiter asking again, and {@code waitedFor} (this store
     * waits for the key) makes a waiter.
     */
    private Ask ask(
            RedisKeys keys, LockKey key, String owner, String millis, boolean waitedFor, AcquireRequest request) {
        long sent = System.nanoTime();
        Asked before = asked.get(owner);
        boolean remember = request != null ? request.waiting() : policy.fair() || waitedFor || before != null;
        if (request == null) {
            Duration leaseFor = Duration.ofMillis(Long.parseLong(millis));
            request = waitedFor || before != null
                    ? AcquireRequest.waiting(
                            key, owner, leaseFor, before == null ? null : Duration.ofNanos(sent - before.first()))
                    : AcquireRequest.once(key, owner, leaseFor);
        }
        boolean waiting = request.waiting();
        if (waiting && before != null && !pushed.isEmpty()) {
            List<Object> taken = takePushed(keys.channel(key), owner, before.last(), sent);
            if (taken != null) {
                asked.remove(owner);
                return new Ask(owner, sent, before, false, true, Duration.ZERO, false, taken);
            }
        }
        return new Ask(
                owner, sent, before, policy.takesPlace(request), waiting, policy.untilPlace(request), remember, null);
    }

    /** One acquire's keys (named from {@code lease}, the key's lease hash) and arguments. */
    private ScriptArgs acquireArgs(String lease, Ask ask, String millis, String counterTtl) {
        String wake = sharded ? lease + RedisKeys.RELEASED : wakeChannel;
        String join = ask.join() ? "1" : "0";
        return policy.fair()
                ? ScriptArgs.of(
                        ACQUIRE_HEADS.sha(),
                        lease,
                        ACQUIRE_KEYS,
                        ask.owner(),
                        millis,
                        queueTtlMillis,
                        wake,
                        join,
                        counterTtl)
                : ScriptArgs.of(
                        BARGING_ACQUIRE_HEADS.sha(),
                        lease,
                        ACQUIRE_KEYS,
                        ask.owner(),
                        millis,
                        counterTtl,
                        join,
                        queueTtlMillis,
                        wake);
    }

    private List<Object> answered(Ask ask, List<Object> reply) {
        String owner = ask.owner();
        Asked before = ask.before();
        boolean join = ask.join();
        long sent = ask.sent();
        if (!Long.valueOf(0).equals(reply.get(0))) {
            asked.remove(owner);
            return reply;
        }
        if (ask.remember()) {
            // only waiters are remembered: a stream of single tries costs no memory
            remember(owner, before, sent);
        }
        if (!(join || ask.waiting())) {
            return reply;
        }
        // A queued waiter asks again at least three times per queue TTL (to keep its place), and
        // in bounded barging one not yet queued when its bound has passed (to take a place),
        // whatever the holder's TTL.
        long waitMillis = ((Number) reply.get(1)).longValue();
        long askAgainMillis =
                join ? queueTtlNanos / 3_000_000 : Math.max(1, ask.untilPlace().toMillis());
        return waitMillis <= askAgainMillis ? reply : List.of(0L, askAgainMillis);
    }

    /**
     * The reply of a granted acquire built from a pushed hand-off, or null. Valid until the waiter's
     * last ask plus one queue TTL, which is no later than the server's end of the hand-off.
     */
    private List<Object> takePushed(String keyChannel, String owner, long askedAt, long now) {
        Pushed grant = pushed.remove(Script.sha1(owner));
        if (grant == null || !grant.keyChannel().equals(keyChannel)) {
            return null;
        }
        long remainingMillis = Math.min(grant.ttlMillis(), (askedAt + queueTtlNanos - now) / 1_000_000);
        if (remainingMillis < 1) {
            return null; // too late to trust: let the script answer
        }
        long expiresAtMicros = grant.grantedAtMicros() + grant.ttlMillis() * 1000;
        long replyAtMicros = expiresAtMicros - remainingMillis * 1000;
        return List.of(1L, grant.fence(), remainingMillis, replyAtMicros / 1_000_000, replyAtMicros % 1_000_000, 0L);
    }

    Long release(
            BaseRedisCommands<String, String> redis, RedisKeys keys, LockKey key, String owner, String counterTtl) {
        return releaseScript().run(redis, INTEGER, releaseHeads(), releaseArgs(keys.lease(key), owner, counterTtl));
    }

    /** {@link #release} with the script sent on asynchronous commands: no thread waits for the reply. */
    CompletionStage<Long> releaseAsync(
            BaseRedisAsyncCommands<String, String> redis,
            RedisKeys keys,
            LockKey key,
            String owner,
            String counterTtl) {
        return releaseScript()
                .runAsync(
                        redis,
                        INTEGER,
                        releaseHeads(),
                        releaseArgs(keys.lease(key), owner, counterTtl),
                        reply -> reply);
    }

    /** The acquire script of this queue's mode. */
    Script acquireScript() {
        return policy.fair() ? ACQUIRE : BARGING_ACQUIRE;
    }

    /** The release script of this queue's mode. */
    Script releaseScript() {
        return policy.fair() ? RELEASE : BARGING_RELEASE;
    }

    /** One release's keys (named from {@code lease}) and arguments (its channel is named in the script). */
    private ScriptArgs releaseArgs(String lease, String owner, String counterTtl) {
        return ScriptArgs.of(
                releaseHeads().sha(), lease, RELEASE_KEYS, owner, counterTtl, sharded ? "SPUBLISH" : "PUBLISH");
    }

    private Script.Heads acquireHeads() {
        return policy.fair() ? ACQUIRE_HEADS : BARGING_ACQUIRE_HEADS;
    }

    private Script.Heads releaseHeads() {
        return policy.fair() ? RELEASE_HEADS : BARGING_RELEASE_HEADS;
    }

    private void remember(String owner, Asked before, long sent) {
        long last = lastPurge.get();
        if ((asked.size() >= MEMORY || pushed.size() >= MEMORY)
                && sent - last > queueTtlNanos / 4
                && lastPurge.compareAndSet(last, sent)) {
            // single tries that never came back, hand-offs never taken: forget those older than a
            // queue TTL (a scan at most every quarter TTL, so a stream of single tries costs no scan
            // per call)
            asked.values().removeIf(at -> sent - at.last() > queueTtlNanos);
            pushed.values().removeIf(p -> sent - p.receivedNanos() > queueTtlNanos);
        }
        asked.put(owner, new Asked(before == null ? sent : before.first(), sent));
    }

    /**
     * A message on the wake channel, {@code <key channel> r:<fence> <sha1 of waiter> <fence> <ttl ms>
     * <time s> <time µs>}, as the key channel's own message {@code [key channel, "r:<fence>"]}; keeps
     * the announced hand-off for the waiter's next acquire first.
     */
    String[] route(String message) {
        String[] f = message.split(" ");
        if (pushedGrants && f.length == 7) {
            try {
                pushed.put(
                        f[2],
                        new Pushed(
                                f[0],
                                Long.parseLong(f[3]),
                                Long.parseLong(f[5]) * 1_000_000 + Long.parseLong(f[6]),
                                Long.parseLong(f[4]),
                                System.nanoTime()));
            } catch (NumberFormatException e) {
                // not a hand-off we understand: the waiter takes the key with the script instead
            }
        }
        return new String[] {f[0], f[1]};
    }
}
