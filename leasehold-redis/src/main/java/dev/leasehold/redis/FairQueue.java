package dev.leasehold.redis;

import dev.leasehold.LockKey;
import io.lettuce.core.ScriptOutputType;
import io.lettuce.core.api.sync.RedisScriptingCommands;
import java.time.Duration;
import java.util.HexFormat;
import java.util.List;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ThreadLocalRandom;

/**
 * The fair mode of {@link RedisLeaseStore} ({@link RedisLeaseStore.Builder#fairQueue}): waiters of
 * every process queue in Redis, per key, and a release hands the key to the first live waiter in the
 * same script, waking only that waiter's store.
 *
 * <pre>
 * {prefix}{key}:queue    ZSET owner -> arrival (server µs)
 * {prefix}{key}:waiters  HASH owner -> '&lt;expires_ms&gt; &lt;wake channel&gt;'
 * {prefix}wake:&lt;id&gt;     pub/sub channel of one store instance: '&lt;key channel&gt; r:&lt;fence&gt;'
 * </pre>
 *
 * <p>A caller takes a place the second time it asks for a busy key with the same owner token (a
 * waiter asks again; a single try, the HTTP 409 path, asks once and so never holds up the queue:
 * {@code RedisFairQueueTest#aSingleTryTakesNoPlaceAndDoesNotBlockTheNextWaiter}), or at once when
 * this store already waits for the key (it has a release subscription for it: the lock service
 * subscribes only for waiters, and its fair local queue sends no single try to the store while
 * one of its threads waits). The lock service asks with one token for all attempts of a wait.
 * A place expires {@code queueTtl} after the owner last asked: a waiter that crashed, or gave up,
 * holds the queue up for at most that long, even when the key was handed to it (the hand-off lasts
 * the rest of its queue TTL until the waiter takes it with its next acquire).
 */
final class FairQueue {

    static final Script ACQUIRE = Script.joined("fair-acquire", "fair-fence", "fair-acquire");
    static final Script RELEASE = Script.joined("fair-release", "fair-fence", "fair-release");

    private static final int BUSY_MEMORY = 4096;

    final String wakeChannel;
    /** Whether the store's pub/sub connection listens on {@link #wakeChannel}; guarded by the store's subscription lock. */
    boolean subscribed;

    private final String queueTtlMillis;
    private final long queueTtlNanos;
    /** Owners told "busy" once and not yet back, with when: their next ask takes a place. */
    private final ConcurrentHashMap<String, Long> toldBusy = new ConcurrentHashMap<>();

    private final java.util.concurrent.atomic.AtomicLong lastPurge =
            new java.util.concurrent.atomic.AtomicLong(System.nanoTime());

    FairQueue(String keyPrefix, Duration queueTtl) {
        byte[] id = new byte[8];
        ThreadLocalRandom.current().nextBytes(id);
        this.wakeChannel = keyPrefix + "wake:" + HexFormat.of().formatHex(id);
        this.queueTtlMillis = Long.toString(queueTtl.toMillis());
        this.queueTtlNanos = queueTtl.toNanos();
    }

    private static String[] keys(RedisKeys keys, LockKey key) {
        String lease = keys.lease(key);
        return new String[] {lease, keys.fence(key), lease + ":queue", lease + ":waiters"};
    }

    List<Object> acquire(
            RedisScriptingCommands<String, String> redis,
            RedisKeys keys,
            LockKey key,
            String owner,
            String millis,
            String counterTtl,
            boolean waitedFor) {
        String join = toldBusy.remove(owner) != null || waitedFor ? "1" : "0";
        List<Object> reply = ACQUIRE.run(
                redis,
                ScriptOutputType.MULTI,
                keys(keys, key),
                owner,
                millis,
                queueTtlMillis,
                wakeChannel,
                join,
                counterTtl);
        if (join.equals("0") && Long.valueOf(0).equals(reply.get(0))) {
            remember(owner);
        }
        return reply;
    }

    Long release(
            RedisScriptingCommands<String, String> redis,
            RedisKeys keys,
            LockKey key,
            String owner,
            String counterTtl) {
        return RELEASE.run(redis, ScriptOutputType.INTEGER, keys(keys, key), owner, keys.channel(key), counterTtl);
    }

    private void remember(String owner) {
        long now = System.nanoTime();
        long last = lastPurge.get();
        if (toldBusy.size() >= BUSY_MEMORY && now - last > queueTtlNanos / 4 && lastPurge.compareAndSet(last, now)) {
            // single tries that never came back: forget those older than a queue TTL (a scan at most
            // every quarter TTL, so a stream of busy single tries costs no scan per call)
            toldBusy.values().removeIf(at -> now - at > queueTtlNanos);
        }
        toldBusy.put(owner, now);
    }

    /**
     * A message on a wake channel as the key channel's own message: {@code [key channel, "r:<fence>"]}.
     */
    static String[] route(String message) {
        int space = message.lastIndexOf(' ');
        return new String[] {message.substring(0, space), message.substring(space + 1)};
    }
}
