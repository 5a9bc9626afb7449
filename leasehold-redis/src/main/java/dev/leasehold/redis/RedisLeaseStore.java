package dev.leasehold.redis;

import dev.leasehold.LeaseInfo;
import dev.leasehold.LeaseStoreException;
import dev.leasehold.LockKey;
import dev.leasehold.spi.AcquireRequest;
import dev.leasehold.spi.AcquireResult;
import dev.leasehold.spi.BatchAcquireResult;
import dev.leasehold.spi.Grant;
import dev.leasehold.spi.LeaseStore;
import dev.leasehold.spi.OwnerTokens;
import dev.leasehold.spi.ReleaseNotice;
import dev.leasehold.spi.ReleaseSubscription;
import io.lettuce.core.RedisClient;
import io.lettuce.core.RedisException;
import io.lettuce.core.ScanArgs;
import io.lettuce.core.ScanIterator;
import io.lettuce.core.ScriptOutputType;
import io.lettuce.core.api.StatefulConnection;
import io.lettuce.core.api.StatefulRedisConnection;
import io.lettuce.core.api.sync.RedisServerCommands;
import io.lettuce.core.cluster.RedisClusterClient;
import io.lettuce.core.cluster.SlotHash;
import io.lettuce.core.cluster.api.StatefulRedisClusterConnection;
import io.lettuce.core.cluster.api.async.RedisClusterAsyncCommands;
import io.lettuce.core.cluster.api.sync.RedisClusterCommands;
import io.lettuce.core.codec.StringCodec;
import io.lettuce.core.output.ArrayOutput;
import io.lettuce.core.protocol.CommandArgs;
import io.lettuce.core.protocol.ProtocolKeyword;
import io.lettuce.core.pubsub.RedisPubSubAdapter;
import io.lettuce.core.pubsub.StatefulRedisPubSubConnection;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.TreeSet;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedDeque;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.Consumer;
import java.util.function.Function;
import java.util.function.Predicate;
import java.util.function.Supplier;
import java.util.regex.Pattern;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A {@link LeaseStore} on Redis through Lettuce: standalone, Sentinel (a {@link RedisClient} with a
 * sentinel URI) or Cluster (a {@link RedisClusterClient}).
 *
 * <p>Every operation is one Lua script, one round trip, atomic on the server; the scripts, each
 * headed by the exact condition it implements, are resources of this package:
 *
 * <ul>
 *   <li>acquire: grant if the lease key is absent (Redis removed it at its {@code PX} expiry, so
 *       expiry is the server's clock) or already held by the same owner; a new grant's fence is
 *       {@code max(counter + 1, server TIME in microseconds)}, and the counter keeps it for {@link
 *       Builder#fenceCounterTtl};
 *   <li>renew: compare-and-{@code PEXPIRE}; release: compare-and-delete, then publish a wake-up;
 *       force-release: delete and publish; inspect: owner, fence and TTL read at once.
 * </ul>
 *
 * <p>Fences are a hybrid logical clock: the per-key counter orders grants within a microsecond,
 * and the server's clock is a floor under every fence. So fences strictly increase also when Redis
 * comes back with an older counter or none (a restart without persistence or from an older RDB
 * snapshot, an AOF whose last second was never fsynced, a replica promoted before it received the
 * last grants, an expired counter), as long as the server's clock does not go back (tests: {@code
 * RedisFenceRecoveryTest}). Leases themselves are not kept by such a recovery: see {@link
 * Builder#replicaAcknowledgement} for failovers.
 *
 * <p>Waiters of several processes (default mode): any caller may take a free key, but a waiter
 * refused for longer than {@link Builder#bargingBound} (default {@link #DEFAULT_BARGING_BOUND})
 * takes a place in the key's queue in Redis, the queue of the {@linkplain Builder#fairQueue fair
 * mode}. While a live waiter is queued the acquire grants the key only to the first one, and a
 * release hands it over to that waiter in the same script and wakes only its store, so waiters in
 * other processes never starve (eight lock services with their own clients on one key, 1 ms held:
 * each gets at least a quarter of its share, Jain's fairness index at least 0.9, {@code
 * RedisBoundedBargingTest.eightLockServicesOnOneKeyGetEvenShares}; fences increase
 * across hand-offs, {@code #aReleaseHandsTheKeyToQueuedWaitersInArrivalOrderWithIncreasingFences}).
 * With nobody queued the acquire and the release are still one script each, whose only extra work
 * is one {@code EXISTS} of the queue key ({@code
 * #withNobodyQueuedAcquireAndReleaseAreOneScriptEachAndLeaveNoQueueBehind}).
 *
 * <p>The builder refuses Redis older than 5.0 and a {@code maxmemory-policy} that evicts keys
 * (test: {@code RedisServerChecksTest}).
 *
 * <p>Wake-ups: one pub/sub connection per store, one subscription per channel however many waiters
 * in this JVM wait for it (the engine queues them). A lost message costs a waiter at most the
 * holder's remaining lease, the engine's bounded poll. On a cluster whose masters all run Redis 7.0
 * or later a key's wake-ups are shard messages ({@code SPUBLISH} in the script, {@code SSUBSCRIBE}
 * on the node serving the key's slot), which stay on that shard instead of being broadcast over
 * the cluster bus (test: {@code
 * RedisClusterConformanceTest.releaseNoticesTravelByShardedPubSubToTheNodeOfTheKeysSlot});
 * standalone and Sentinel use {@code PUBLISH}/{@code SUBSCRIBE}, and so does the store-wide
 * force-release channel everywhere, since its subscribers may be connected to any node.
 *
 * <p>Thread-safe; the command connection is shared and pipelines concurrent calls. Lettuce's
 * command timeout (from the {@code RedisURI}) bounds every call; a failure or timeout is a {@link
 * LeaseStoreException} naming the key.
 */
public final class RedisLeaseStore implements LeaseStore {

    private static final Logger log = LoggerFactory.getLogger(RedisLeaseStore.class);
    private static final Pattern PREFIX = Pattern.compile("[A-Za-z0-9_.:\\-]{1,64}");
    private static final Pattern LOCAL_ADDRESS = Pattern.compile("(?:^|\\s)laddr=(\\S+)");

    /** How long a fence counter stays after its key's last grant unless the builder says otherwise. */
    public static final Duration DEFAULT_FENCE_COUNTER_TTL = Duration.ofDays(1);

    private static final Script RENEW = Script.load("renew");
    private static final Script FORCE_RELEASE = Script.load("force-release");
    private static final Script INSPECT = Script.load("inspect");
    private static final Script ACQUIRE_ALL = Script.load("acquire-all");

    /** How long a waiter barges before it takes a place in the key's queue, unless the builder says otherwise. */
    public static final Duration DEFAULT_BARGING_BOUND = Duration.ofMillis(50);

    /** How long a place of the default mode's queue lasts after its waiter's last ask, unless the builder says otherwise. */
    public static final Duration DEFAULT_BARGING_QUEUE_TTL = Duration.ofMillis(300);

    private final StatefulConnection<String, String> connection;
    private final RedisClusterCommands<String, String> redis;
    private final RedisClusterAsyncCommands<String, String> async; // the same connection: waiting acquires, leaves
    private final String keyPrefix;
    private final String counterTtl;
    private final Acknowledgement acknowledgement;
    private final Supplier<StatefulRedisConnection<String, String>> writerFactory;
    private final ConcurrentLinkedDeque<StatefulRedisConnection<String, String>> writers =
            new ConcurrentLinkedDeque<>();
    private volatile boolean storeClosed;
    private final Supplier<StatefulRedisPubSubConnection<String, String>> pubSubFactory;
    private final RedisKeys keys;
    private final String name;
    private final FairQueue queue; // the fair mode (Builder.fairQueue), or the default mode's bounded barging
    private final boolean cluster;
    private final boolean sharded;
    private final String publish;

    private final ReentrantLock subscriptions = new ReentrantLock();
    private final ConcurrentHashMap<String, CopyOnWriteArrayList<Subscription>> byChannel = new ConcurrentHashMap<>();
    // written under subscriptions; read without it only by the listener, to subscribe again
    private volatile StatefulRedisPubSubConnection<String, String> pubSub;

    private RedisLeaseStore(Builder builder) {
        this.connection = builder.connection;
        this.redis = builder.commands;
        this.async = builder.connection instanceof StatefulRedisConnection<String, String> standalone
                ? standalone.async()
                : builder.connection instanceof StatefulRedisClusterConnection<String, String> cluster
                        ? cluster.async()
                        : null;
        this.keyPrefix = builder.keyPrefix;
        this.counterTtl = Long.toString(builder.fenceCounterTtl.toMillis());
        this.acknowledgement = builder.acknowledgement;
        this.writerFactory = builder.writerFactory;
        this.pubSubFactory = builder.pubSubFactory;
        this.keys = new RedisKeys(builder.keyPrefix);
        this.name = builder.name;
        this.cluster = builder.cluster;
        this.sharded = builder.sharded;
        this.publish = sharded ? "SPUBLISH" : "PUBLISH";
        this.queue = builder.fairQueueTtl == null
                ? new FairQueue(
                        builder.keyPrefix,
                        builder.bargingQueueTtl,
                        builder.acknowledgement == null,
                        sharded,
                        builder.bargingBound)
                : new FairQueue(
                        builder.keyPrefix, builder.fairQueueTtl, builder.acknowledgement == null, sharded, null);
        for (Script script : List.of(
                queue.fair ? FairQueue.ACQUIRE : FairQueue.BARGING_ACQUIRE,
                queue.fair ? FairQueue.RELEASE : FairQueue.BARGING_RELEASE,
                ACQUIRE_ALL,
                RENEW,
                FORCE_RELEASE,
                INSPECT)) {
            try {
                redis.scriptLoad(script.body());
            } catch (RedisException e) {
                // Not fatal: the first call of the script loads it through the NOSCRIPT fallback.
                log.warn("could not preload Lua script {}: {}", script.name(), e.getMessage());
            }
        }
    }

    /** A builder for a store on a standalone or Sentinel-managed Redis. */
    public static Builder builder(RedisClient client) {
        Objects.requireNonNull(client, "client is missing (null)");
        return new Builder(
                () -> {
                    StatefulRedisConnection<String, String> connection = client.connect();
                    return new Builder.Connection(
                            connection, connection.sync(), () -> Map.of(address(connection.sync()), connection.sync()));
                },
                client::connectPubSub,
                client::connect,
                "redis",
                false);
    }

    /** A builder for a store on a Redis Cluster. */
    public static Builder builder(RedisClusterClient client) {
        Objects.requireNonNull(client, "client is missing (null)");
        return new Builder(
                () -> {
                    StatefulRedisClusterConnection<String, String> connection = client.connect();
                    return new Builder.Connection(connection, connection.sync(), () -> {
                        Map<String, RedisServerCommands<String, String>> masters = new LinkedHashMap<>();
                        connection
                                .sync()
                                .upstream()
                                .asMap()
                                .forEach((node, commands) -> masters.put(
                                        node.getUri().getHost() + ":"
                                                + node.getUri().getPort(),
                                        commands));
                        return masters;
                    });
                },
                client::connectPubSub,
                null,
                "redis-cluster",
                true);
    }

    /**
     * Asks without saying whether the caller waits: an owner token that asks again after a busy
     * answer is taken for a waiter, and so is any caller while this store waits for the key (the
     * lock service asks with {@link #tryAcquire(AcquireRequest)}, which says it).
     */
    @Override
    public AcquireResult tryAcquire(LockKey key, String owner, Duration leaseFor) {
        return acquire(key, owner, leaseFor, null);
    }

    /** Only a waiter takes a place in the key's queue; a single try never does. */
    @Override
    public AcquireResult tryAcquire(AcquireRequest request) {
        return acquire(request.key(), request.owner(), request.leaseFor(), request);
    }

    private AcquireResult acquire(LockKey key, String owner, Duration leaseFor, AcquireRequest request) {
        checkOwner(key, owner);
        String millis = millis(leaseFor);
        List<Object> reply = write(
                "acquire",
                key.render(),
                commands -> queue.acquire(
                        commands,
                        keys,
                        key,
                        owner,
                        millis,
                        counterTtl,
                        byChannel.containsKey(keys.channel(key)),
                        request),
                granted -> asLong(granted.get(0)) == 1,
                granted -> {
                    if (asLong(granted.get(5)) == 1) {
                        runRelease(key, owner);
                        return "the grant was released again";
                    }
                    return "the lease, held before by the same owner, is kept";
                });
        return acquireResult(reply);
    }

    private static AcquireResult acquireResult(List<Object> reply) {
        if (asLong(reply.get(0)) == 1) {
            return new AcquireResult.Granted(grant(reply, 1));
        }
        return new AcquireResult.Busy(Duration.ofMillis(Math.max(0, asLong(reply.get(1)))));
    }

    /**
     * The acquire script sent without a thread waiting for it, so a caller that waits with a
     * deadline waits for the reply itself. Only where the script is the whole operation: with a
     * fair queue or a replica acknowledgement configured, null (the engine calls {@link
     * #tryAcquire} on a worker).
     */
    @Override
    public CompletionStage<AcquireResult> tryAcquireAsync(LockKey key, String owner, Duration leaseFor) {
        return acquireAsync(key, owner, leaseFor, null);
    }

    @Override
    public CompletionStage<AcquireResult> tryAcquireAsync(AcquireRequest request) {
        return acquireAsync(request.key(), request.owner(), request.leaseFor(), request);
    }

    private CompletionStage<AcquireResult> acquireAsync(
            LockKey key, String owner, Duration leaseFor, AcquireRequest request) {
        if (acknowledgement != null || async == null) {
            return null;
        }
        checkOwner(key, owner);
        return queue.acquireAsync(
                        async,
                        keys,
                        key,
                        owner,
                        millis(leaseFor),
                        counterTtl,
                        byChannel.containsKey(keys.channel(key)),
                        request)
                .thenApply(RedisLeaseStore::acquireResult);
    }

    /**
     * The batch in as few scripts as there are slots among its keys: on standalone and Sentinel
     * one script for the whole batch; on a cluster one per slot (keys with one {@linkplain
     * LockKey#withHashTag hash tag} share a slot), taken in the order of the batch's keys. Each
     * script grants all its keys or none, atomically; when a later slot's key is busy, what the
     * earlier scripts granted is released again, so the batch is still all or nothing (tests:
     * {@code LeaseStoreConformance.aStoreBatchIsGrantedWhollyOrNotAtAll}, {@code
     * RedisClusterConformanceTest.aBatchAcrossSlotsIsOneScriptPerSlotAndAllOrNothing}). A batch
     * refused for want of a replica acknowledgement undoes only its new grants; leases the owner
     * held before are kept ({@code
     * RedisReplicaAcknowledgementTest.aBatchNotAcknowledgedKeepsTheLeasesItsOwnerHeldBefore}). The
     * script refuses a free key whose queue has a live waiter other than the batch's owner, so a
     * batch never passes a waiter queued by the default mode's bounded barging ({@code
     * RedisBoundedBargingTest.aBatchNeverPassesAQueuedWaiter}). In the
     * {@linkplain Builder#fairQueue fair mode} the keys are taken one by one with the fair scripts
     * instead, so a batch never passes a waiter queued in Redis, and a key given back hands off to
     * the head of its queue ({@code RedisFairQueueTest.aBatchIsRefusedAKeyWhoseQueueHasALiveWaiterAndHoldsNothing}).
     */
    @Override
    public BatchAcquireResult tryAcquireAll(List<LockKey> batch, String owner, Duration leaseFor) {
        if (queue.fair) {
            return LeaseStore.super.tryAcquireAll(batch, owner, leaseFor);
        }
        LeaseStore.checkBatch(batch);
        batch.forEach(key -> checkOwner(key, owner));
        String millis = millis(leaseFor);
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
        if (!cluster) {
            return List.of(batch);
        }
        Map<Integer, List<LockKey>> bySlot = new LinkedHashMap<>();
        for (LockKey key : batch) {
            bySlot.computeIfAbsent(SlotHash.getSlot(keys.lease(key)), slot -> new ArrayList<>())
                    .add(key);
        }
        return List.copyOf(bySlot.values());
    }

    private List<Object> acquireGroup(List<LockKey> group, String owner, String millis) {
        String[] scriptKeys = new String[group.size() * 4];
        for (int i = 0; i < group.size(); i++) {
            System.arraycopy(FairQueue.keys(keys, group.get(i)), 0, scriptKeys, 4 * i, 4);
        }
        String what = group.size() == 1
                ? group.get(0).render()
                : group.size() + " keys " + group.get(0) + " .. " + group.get(group.size() - 1);
        return write(
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
                runRelease(taken.get(i), owner);
            } catch (RedisException e) {
                if (failure != null) {
                    failure.addSuppressed(e);
                } else {
                    log.warn("releasing {} of a refused batch failed; it expires with its lease", taken.get(i), e);
                }
            }
        }
    }

    @Override
    public Optional<Grant> renew(LockKey key, String owner, Duration leaseFor) {
        checkOwner(key, owner);
        String millis = millis(leaseFor);
        List<Object> reply = write(
                "renew",
                key.render(),
                commands -> RENEW.run(commands, ScriptOutputType.MULTI, new String[] {keys.lease(key)}, owner, millis),
                renewed -> !renewed.isEmpty(),
                renewed -> "the renewal stays on the master");
        return reply.isEmpty() ? Optional.empty() : Optional.of(grant(reply, 0));
    }

    @Override
    public boolean release(LockKey key, String owner) {
        checkOwner(key, owner);
        Long released = call("release", key, () -> runRelease(key, owner));
        return released != null && released == 1;
    }

    /**
     * Drops the place of a waiter that gave up, and gives a key handed to it to the next waiter (a
     * release, which does nothing unless the key is the waiter's). Without it a key handed to a
     * waiter that gave up stays with it until its place expires. Sent on the asynchronous commands
     * of the store's connection without waiting for the replies, so commands sent after it on
     * this store reach Redis after it; a failure is logged. With a replica acknowledgement it is a
     * write that is waited for like a grant, so a failover cannot bring the place or its hand-off
     * back; when the acknowledgement falls short a {@link ReplicaAcknowledgementException} says so.
     */
    @Override
    public void leaveQueue(LockKey key, String owner) {
        checkOwner(key, owner);
        queue.forget(owner);
        String[] queueKeys = FairQueue.keys(keys, key);
        if (acknowledgement != null) {
            write(
                    "leave the queue",
                    key.render(),
                    commands -> {
                        commands.zrem(queueKeys[2], owner);
                        commands.hdel(queueKeys[3], owner);
                        return queue.release(commands, keys, key, owner, counterTtl);
                    },
                    released -> true,
                    released -> "the leave stays on the master");
            return;
        }
        if (async == null) {
            call("leave the queue", key, () -> {
                redis.zrem(queueKeys[2], owner);
                redis.hdel(queueKeys[3], owner);
                return null;
            });
            release(key, owner);
            return;
        }
        try {
            async.zrem(queueKeys[2], owner);
            async.hdel(queueKeys[3], owner);
            queue.releaseAsync(async, keys, key, owner, counterTtl).whenComplete((released, failure) -> {
                if (failure != null) {
                    log.debug("could not leave the queue of {}; the place ends at its queue TTL", key, failure);
                }
            });
        } catch (RedisException e) {
            throw new LeaseStoreException("leave the queue", key.render(), e);
        }
    }

    /**
     * Whether {@link #leaveQueue} only sends: on a connection with asynchronous commands, and
     * without a replica acknowledgement (whose wait blocks).
     */
    @Override
    public boolean leavesQueueWithoutBlocking() {
        return async != null && acknowledgement == null;
    }

    private Long runRelease(LockKey key, String owner) {
        return queue.release(redis, keys, key, owner, counterTtl);
    }

    @Override
    public Optional<LeaseInfo> inspect(LockKey key) {
        Objects.requireNonNull(key, "key is missing (null)");
        List<Object> reply =
                call("inspect", key, () -> INSPECT.run(redis, ScriptOutputType.MULTI, new String[] {keys.lease(key)}));
        if (reply.isEmpty()) {
            return Optional.empty();
        }
        Duration remaining = Duration.ofMillis(Math.max(0, asLong(reply.get(2))));
        Instant now = instant(reply.get(3), reply.get(4));
        return Optional.of(
                new LeaseInfo(key, (String) reply.get(0), asLong(reply.get(1)), remaining, now.plus(remaining)));
    }

    /** Scans for lease keys (SCAN, every node of a cluster), then inspects each one. */
    @Override
    public List<LeaseInfo> list(String namespace, int limit) {
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

    @Override
    public boolean forceRelease(LockKey key) {
        Objects.requireNonNull(key, "key is missing (null)");
        Long deleted = call(
                "force-release",
                key,
                () -> FORCE_RELEASE.run(
                        redis,
                        ScriptOutputType.INTEGER,
                        new String[] {keys.lease(key)},
                        keys.channel(key),
                        keys.forceReleaseChannel(),
                        key.render(),
                        publish));
        return deleted != null && deleted == 1;
    }

    @Override
    public boolean supportsReleaseNotifications() {
        return true;
    }

    @Override
    public ReleaseSubscription subscribe(LockKey key, Consumer<ReleaseNotice> onRelease) {
        Objects.requireNonNull(key, "key is missing (null)");
        Objects.requireNonNull(onRelease, "onRelease is missing (null)");
        String rendered = key.render();
        return subscribe(keys.channel(key), sharded, rendered, message -> keyNotice(rendered, message), onRelease);
    }

    /** Every force-release of this store's keys, from the store-wide channel. */
    @Override
    public ReleaseSubscription subscribeForceReleases(Consumer<ReleaseNotice> onForceRelease) {
        Objects.requireNonNull(onForceRelease, "onForceRelease is missing (null)");
        return subscribe(
                keys.forceReleaseChannel(), false, "(force-releases)", RedisLeaseStore::forceNotice, onForceRelease);
    }

    /** A key channel's message: {@code r:<fence>} for a release, {@code f:<fence>} for a force-release. */
    private static ReleaseNotice keyNotice(String key, String message) {
        boolean forced = message.startsWith("f:");
        return new ReleaseNotice(key, parseFence(message.substring(message.indexOf(':') + 1)), forced);
    }

    /** The store-wide channel's message: {@code <fence>:<rendered key>}. */
    private static ReleaseNotice forceNotice(String message) {
        int colon = message.indexOf(':');
        return new ReleaseNotice(message.substring(colon + 1), parseFence(message.substring(0, colon)), true);
    }

    private static long parseFence(String text) {
        try {
            return Math.max(0, Long.parseLong(text));
        } catch (NumberFormatException e) {
            return 0;
        }
    }

    private ReleaseSubscription subscribe(
            String channel,
            boolean shardChannel,
            String what,
            Function<String, ReleaseNotice> decoder,
            Consumer<ReleaseNotice> onRelease) {
        Subscription subscription = new Subscription(channel, shardChannel, decoder, onRelease);
        subscriptions.lock();
        try {
            CopyOnWriteArrayList<Subscription> list =
                    byChannel.computeIfAbsent(channel, c -> new CopyOnWriteArrayList<>());
            boolean first = list.isEmpty();
            list.add(subscription);
            if (first) {
                try {
                    // Returns once the server confirmed: a release published after this is delivered.
                    if (!queue.sharded && !queue.subscribed) {
                        pubSub().sync().subscribe(queue.wakeChannel); // hand-offs to this store's waiters
                        queue.subscribed = true;
                    }
                    // A shard channel is subscribed on the node that serves its slot (Lettuce routes it).
                    if (shardChannel) {
                        pubSub().sync().ssubscribe(channel);
                    } else {
                        pubSub().sync().subscribe(channel);
                    }
                } catch (RedisException e) {
                    list.remove(subscription);
                    byChannel.remove(channel, list);
                    throw new LeaseStoreException("subscribe to releases", what, e);
                }
            }
        } finally {
            subscriptions.unlock();
        }
        return subscription;
    }

    private StatefulRedisPubSubConnection<String, String> pubSub() {
        if (pubSub == null) {
            StatefulRedisPubSubConnection<String, String> connection = pubSubFactory.get();
            connection.addListener(new RedisPubSubAdapter<>() {
                @Override
                public void message(String channel, String message) {
                    String[] routed =
                            channel.equals(queue.wakeChannel) ? queue.route(message) : new String[] {channel, message};
                    deliver(routed[0], routed[1]);
                }

                @Override
                public void smessage(String shardChannel, String message) {
                    String[] routed = message.startsWith(shardChannel + " ")
                            ? queue.route(message) // a hand-off, on the key's own shard channel
                            : new String[] {shardChannel, message};
                    deliver(routed[0], routed[1]);
                }

                @Override
                public void sunsubscribed(String shardChannel, long count) {
                    subscribeAgainIfWanted(shardChannel);
                }
            });
            pubSub = connection;
        }
        return pubSub;
    }

    /**
     * A shard channel was unsubscribed: by this store when its last subscription closed, or by
     * the server when the channel's slot moved to another node (Redis unsubscribes the clients of
     * a slot it gives up). In the second case someone here still waits for it, and it is
     * subscribed again, where the slot now is. Runs on the client's I/O thread: takes no lock and
     * does not wait.
     */
    private void subscribeAgainIfWanted(String shardChannel) {
        CopyOnWriteArrayList<Subscription> list = byChannel.get(shardChannel);
        StatefulRedisPubSubConnection<String, String> connection = pubSub;
        if (storeClosed || connection == null || list == null || list.isEmpty()) {
            return;
        }
        try {
            connection.async().ssubscribe(shardChannel).whenComplete((done, failure) -> {
                if (failure != null) {
                    log.warn(
                            "could not subscribe again to {} after the server dropped it: {}; its waiters fall"
                                    + " back to their bounded poll",
                            shardChannel,
                            failure.getMessage());
                }
            });
        } catch (RuntimeException e) {
            log.warn("could not subscribe again to {}: {}", shardChannel, e.getMessage());
        }
    }

    private void deliver(String channel, String message) {
        queue.forgetForced(message); // a hand-off removed by an operator is never taken from its wake-up
        CopyOnWriteArrayList<Subscription> list = byChannel.get(channel);
        if (list != null) {
            list.forEach(subscription -> subscription.fire(message));
        }
    }

    /**
     * Whether release notices travel by sharded pub/sub ({@code SPUBLISH}/{@code SSUBSCRIBE}): on
     * a cluster whose masters all run Redis 7.0 or later.
     */
    boolean shardedNotices() {
        return sharded;
    }

    @Override
    public String name() {
        return name;
    }

    /** Closes the connections this store opened; the client stays open. */
    @Override
    public void close() {
        subscriptions.lock();
        try {
            if (pubSub != null) {
                pubSub.close();
                pubSub = null;
            }
            queue.subscribed = false;
            byChannel.clear();
        } finally {
            subscriptions.unlock();
        }
        storeClosed = true;
        for (StatefulRedisConnection<String, String> writer; (writer = writers.poll()) != null; ) {
            writer.close();
        }
        connection.close();
    }

    /**
     * Runs a script that may write, on the shared connection; with an acknowledgement configured,
     * on a connection of its own (WAIT counts the writes of the connection it is sent on, and
     * blocks it), then waits for the acknowledgements. When they fall short, {@code onShortfall}
     * undoes what it can and says what it did, and a {@link ReplicaAcknowledgementException} is
     * thrown.
     */
    private <T> T write(
            String operation,
            String what,
            Function<RedisClusterCommands<String, String>, T> script,
            Predicate<T> wrote,
            Function<T, String> onShortfall) {
        if (acknowledgement == null) {
            try {
                return script.apply(redis);
            } catch (RedisException e) {
                throw new LeaseStoreException(operation, what, e);
            }
        }
        StatefulRedisConnection<String, String> writer = writers.poll();
        boolean reusable = false;
        try {
            if (writer == null) {
                writer = writerFactory.get();
            }
            T result = script.apply(writer.sync());
            if (wrote.test(result)) {
                Shortfall shortfall = acknowledgement.await(writer.sync());
                if (shortfall != null) {
                    String outcome;
                    try {
                        outcome = onShortfall.apply(result);
                    } catch (RedisException e) {
                        outcome = "undoing it failed too (" + e.getMessage() + ")";
                    }
                    reusable = true;
                    throw new ReplicaAcknowledgementException(
                            operation,
                            what,
                            ReplicaAcknowledgementException.detail(
                                    shortfall.what(),
                                    shortfall.required(),
                                    shortfall.acknowledged(),
                                    acknowledgement.timeout(),
                                    outcome),
                            shortfall.required(),
                            shortfall.acknowledged());
                }
            }
            reusable = true;
            return result;
        } catch (RedisException e) {
            throw new LeaseStoreException(operation, what, e);
        } finally {
            if (writer != null) {
                if (reusable && !storeClosed) {
                    writers.push(writer);
                } else {
                    writer.close();
                }
            }
        }
    }

    private <T> T call(String operation, LockKey key, Supplier<T> command) {
        try {
            return command.get();
        } catch (RedisException e) {
            throw new LeaseStoreException(operation, key.render(), e);
        }
    }

    private static Grant grant(List<Object> reply, int from) {
        long fence = asLong(reply.get(from));
        Duration remaining = Duration.ofMillis(asLong(reply.get(from + 1)));
        Instant now = instant(reply.get(from + 2), reply.get(from + 3));
        return new Grant(fence, remaining, now.plus(remaining));
    }

    private static Instant instant(Object seconds, Object micros) {
        return Instant.ofEpochSecond(asLong(seconds), asLong(micros) * 1000);
    }

    private static long asLong(Object value) {
        if (value instanceof Long number) {
            return number;
        }
        return Long.parseLong(String.valueOf(value));
    }

    private static void checkOwner(LockKey key, String owner) {
        Objects.requireNonNull(key, "key is missing (null)");
        OwnerTokens.check(owner);
    }

    /** The server's own address as it reports it ({@code CLIENT INFO}, Redis 6.2+), for messages. */
    private static String address(RedisClusterCommands<String, String> commands) {
        try {
            java.util.regex.Matcher matcher = LOCAL_ADDRESS.matcher(commands.clientInfo());
            if (matcher.find()) {
                return matcher.group(1);
            }
        } catch (RedisException e) {
            // older servers have no CLIENT INFO; the message names no address then
        }
        return "the configured address";
    }

    /** Who must acknowledge a write, and how the store asks: {@code WAIT} or {@code WAITAOF}. */
    record Acknowledgement(boolean aof, int local, int replicas, Duration timeout) {

        private static final ProtocolKeyword WAITAOF = new ProtocolKeyword() {
            @Override
            public byte[] getBytes() {
                return "WAITAOF".getBytes(StandardCharsets.US_ASCII);
            }

            @Override
            public String toString() {
                return "WAITAOF";
            }
        };

        /** Null when every acknowledgement arrived, else what fell short. */
        Shortfall await(RedisClusterCommands<String, String> commands) {
            if (!aof) {
                long acknowledged = commands.waitForReplication(replicas, timeout.toMillis());
                return acknowledged >= replicas
                        ? null
                        : new Shortfall("replicas (WAIT " + replicas + " " + timeout.toMillis() + ")", replicas, (int)
                                acknowledged);
            }
            List<Object> reply = commands.dispatch(
                    WAITAOF,
                    new ArrayOutput<>(StringCodec.UTF8),
                    new CommandArgs<>(StringCodec.UTF8).add(local).add(replicas).add(timeout.toMillis()));
            int localDone = (int) asLong(reply.get(0));
            int replicasDone = (int) asLong(reply.get(1));
            if (localDone >= local && replicasDone >= replicas) {
                return null;
            }
            String command = "WAITAOF " + local + " " + replicas + " " + timeout.toMillis();
            return localDone < local
                    ? new Shortfall("local AOF fsyncs (" + command + ")", local, localDone)
                    : new Shortfall("replica AOF fsyncs (" + command + ")", replicas, replicasDone);
        }
    }

    record Shortfall(String what, int required, int acknowledged) {}

    private static String millis(Duration leaseFor) {
        Objects.requireNonNull(leaseFor, "leaseFor is missing (null)");
        if (leaseFor.toMillis() < 1) {
            throw new IllegalArgumentException("leaseFor must be at least 1 ms for Redis, was " + leaseFor);
        }
        return Long.toString(leaseFor.toMillis());
    }

    private final class Subscription implements ReleaseSubscription {
        private final String channel;
        private final boolean shardChannel;
        private final Function<String, ReleaseNotice> decoder;
        private final Consumer<ReleaseNotice> onRelease;
        private boolean closed; // guarded by subscriptions

        Subscription(
                String channel,
                boolean shardChannel,
                Function<String, ReleaseNotice> decoder,
                Consumer<ReleaseNotice> onRelease) {
            this.channel = channel;
            this.shardChannel = shardChannel;
            this.decoder = decoder;
            this.onRelease = onRelease;
        }

        void fire(String message) {
            try {
                onRelease.accept(decoder.apply(message));
            } catch (RuntimeException e) {
                log.warn("a release callback for {} failed", channel, e);
            }
        }

        @Override
        public void close() {
            subscriptions.lock();
            try {
                if (closed) {
                    return;
                }
                closed = true;
                CopyOnWriteArrayList<Subscription> list = byChannel.get(channel);
                if (list != null && list.remove(this) && list.isEmpty()) {
                    byChannel.remove(channel, list);
                    if (pubSub != null) {
                        // Issued under the lock, so it reaches the server before any later SUBSCRIBE.
                        if (shardChannel) {
                            pubSub.async().sunsubscribe(channel);
                        } else {
                            pubSub.async().unsubscribe(channel);
                        }
                    }
                }
            } finally {
                subscriptions.unlock();
            }
        }
    }

    /** Builds a {@link RedisLeaseStore}; opens its command connection and checks the servers in {@link #build()}. */
    public static final class Builder {
        record Connection(
                StatefulConnection<String, String> connection,
                RedisClusterCommands<String, String> commands,
                Supplier<Map<String, RedisServerCommands<String, String>>> servers) {}

        private final Supplier<Connection> connector;
        private final Supplier<StatefulRedisPubSubConnection<String, String>> pubSubFactory;
        private final Supplier<StatefulRedisConnection<String, String>> writerFactory;
        private final String name;
        private final boolean cluster;
        private boolean sharded;
        private String keyPrefix = "leasehold:";
        private Duration fenceCounterTtl = DEFAULT_FENCE_COUNTER_TTL;
        private boolean allowEviction;
        private Acknowledgement acknowledgement;
        private Duration fairQueueTtl;
        private Duration bargingBound = DEFAULT_BARGING_BOUND;
        private Duration bargingQueueTtl = DEFAULT_BARGING_QUEUE_TTL;
        private StatefulConnection<String, String> connection;
        private RedisClusterCommands<String, String> commands;

        private Builder(
                Supplier<Connection> connector,
                Supplier<StatefulRedisPubSubConnection<String, String>> pubSubFactory,
                Supplier<StatefulRedisConnection<String, String>> writerFactory,
                String name,
                boolean cluster) {
            this.connector = connector;
            this.pubSubFactory = pubSubFactory;
            this.writerFactory = writerFactory;
            this.name = name;
            this.cluster = cluster;
        }

        /**
         * The prefix of every Redis key and channel (default {@code leasehold:}): 1 to 64 letters,
         * digits and {@code _ . : -}.
         *
         * @throws IllegalArgumentException naming the value if it is malformed
         */
        public Builder keyPrefix(String keyPrefix) {
            if (keyPrefix == null || !PREFIX.matcher(keyPrefix).matches()) {
                throw new IllegalArgumentException(
                        "keyPrefix must be 1 to 64 letters, digits, '_', '.', ':' or '-', was '" + keyPrefix + "'");
            }
            this.keyPrefix = keyPrefix;
            return this;
        }

        /**
         * How long a key's fence counter stays after the key's last grant (default {@link
         * #DEFAULT_FENCE_COUNTER_TTL}, at least 1 s), so that keys used once do not stay in Redis
         * for ever. Fences stay increasing when a counter expires: every fence is at least the
         * server's clock in microseconds.
         *
         * @throws IllegalArgumentException if it is shorter than 1 s
         */
        public Builder fenceCounterTtl(Duration ttl) {
            Objects.requireNonNull(ttl, "fenceCounterTtl is missing (null)");
            if (ttl.compareTo(Duration.ofSeconds(1)) < 0) {
                throw new IllegalArgumentException("fenceCounterTtl must be at least 1 s, was " + ttl);
            }
            this.fenceCounterTtl = ttl;
            return this;
        }

        /**
         * Fair mode: waiters of every process queue in Redis per key, in arrival order, and a release
         * hands the key to the first live waiter in the same script and wakes only that waiter's
         * store. A waiter keeps its place while it asks again within {@code queueTtl}; one that
         * crashed holds the queue up for at most that long (RedisFairQueueTest). A place is taken
         * on the second ask with the same owner token (the lock service asks with one token for a
         * whole wait), or at once while this store already waits for the key, so a single try never
         * queues. Every process using a key must use the same mode. 100 ms to 1 h.
         *
         * @throws IllegalArgumentException naming the value if it is out of range
         */
        public Builder fairQueue(Duration queueTtl) {
            if (queueTtl == null
                    || queueTtl.compareTo(Duration.ofMillis(100)) < 0
                    || queueTtl.compareTo(Duration.ofHours(1)) > 0) {
                throw new IllegalArgumentException("fairQueue TTL must be between 100 ms and 1 h, was " + queueTtl);
            }
            this.fairQueueTtl = queueTtl;
            return this;
        }

        /**
         * The default mode's bounded barging (without {@link #fairQueue}): any caller may take a
         * free key, but a waiter refused for longer than {@code bound} (default {@link
         * #DEFAULT_BARGING_BOUND}; the lock service asks with one owner token for a whole wait)
         * takes a place in the key's queue in Redis, the queue of the fair mode. While a live
         * waiter is queued the key is granted only to the first one, and a release hands it to
         * that waiter and wakes only its store, so waiters in other processes never starve
         * (RedisBoundedBargingTest). A single try, asking once, never takes a place. A queued
         * waiter asks again at least three times per {@code queueTtl} (default {@link
         * #DEFAULT_BARGING_QUEUE_TTL}) to keep it: one that crashed, or gave up, holds the key up
         * for at most that long. Bound 1 ms to 1 min; queue TTL 30 ms to 1 min.
         *
         * @throws IllegalArgumentException naming the value if it is out of range
         */
        public Builder bargingBound(Duration bound, Duration queueTtl) {
            if (bound == null || bound.toMillis() < 1 || bound.compareTo(Duration.ofMinutes(1)) > 0) {
                throw new IllegalArgumentException("bargingBound must be between 1 ms and 1 min, was " + bound);
            }
            if (queueTtl == null
                    || queueTtl.compareTo(Duration.ofMillis(30)) < 0
                    || queueTtl.compareTo(Duration.ofMinutes(1)) > 0) {
                throw new IllegalArgumentException(
                        "bargingBound queue TTL must be between 30 ms and 1 min, was " + queueTtl);
            }
            this.bargingBound = bound;
            this.bargingQueueTtl = queueTtl;
            return this;
        }

        /** {@link #bargingBound(Duration, Duration)} with the default queue TTL. */
        public Builder bargingBound(Duration bound) {
            return bargingBound(bound, DEFAULT_BARGING_QUEUE_TTL);
        }

        /**
         * Accepts a server whose {@code maxmemory-policy} evicts keys ({@code allkeys-*}, {@code
         * volatile-*}), which {@link #build()} otherwise refuses: under memory pressure such a server
         * may drop a held lease, and the key is then granted to a second holder (fences still
         * increase).
         */
        public Builder allowEvictingMemoryPolicy() {
            this.allowEviction = true;
            return this;
        }

        /**
         * After every grant and renewal, {@code WAIT replicas timeout}: the operation returns only
         * once that many replicas have it, so a failover to one of them cannot forget it. When fewer
         * answer in time, a new grant is released again (best effort) and the call throws {@link
         * ReplicaAcknowledgementException} naming the shortfall; a renewal throws it too (the engine
         * retries). Standalone and Sentinel only. {@code timeout} must be shorter than the
         * client's command timeout.
         *
         * @throws IllegalArgumentException if {@code replicas < 1} or the timeout is not positive
         */
        public Builder replicaAcknowledgement(int replicas, Duration timeout) {
            this.acknowledgement = acknowledgement(false, 0, replicas, timeout);
            return this;
        }

        /**
         * Like {@link #replicaAcknowledgement}, with {@code WAITAOF local replicas timeout} (Redis
         * 7.2 and later): the operation returns only once it is fsynced to the master's AOF ({@code
         * local} = 1) and to that many replicas' AOFs.
         *
         * @throws IllegalArgumentException if {@code local} is not 0 or 1, {@code replicas < 0},
         *     both are 0, or the timeout is not positive
         */
        public Builder aofAcknowledgement(int local, int replicas, Duration timeout) {
            if (local != 0 && local != 1) {
                throw new IllegalArgumentException("local must be 0 or 1 (the master's own AOF), was " + local);
            }
            if (local == 0 && replicas == 0) {
                throw new IllegalArgumentException("aofAcknowledgement needs local = 1 or replicas >= 1");
            }
            this.acknowledgement = acknowledgement(true, local, replicas, timeout);
            return this;
        }

        private static Acknowledgement acknowledgement(boolean aof, int local, int replicas, Duration timeout) {
            Objects.requireNonNull(timeout, "acknowledgement timeout is missing (null)");
            if (replicas < (aof ? 0 : 1)) {
                throw new IllegalArgumentException("replicas must be at least " + (aof ? 0 : 1) + ", was " + replicas);
            }
            if (timeout.toMillis() < 1) {
                throw new IllegalArgumentException("acknowledgement timeout must be at least 1 ms, was " + timeout);
            }
            return new Acknowledgement(aof, local, replicas, timeout);
        }

        /**
         * Connects, checks every server the store writes to (every master of a cluster), and
         * returns the store. Refused: Redis older than 5.0 (scripts read {@code TIME} before they
         * write); a {@code maxmemory-policy} that evicts, unless {@link #allowEvictingMemoryPolicy()};
         * {@link #aofAcknowledgement} on Redis older than 7.2; an acknowledgement on a cluster or
         * with a timeout not shorter than the command timeout. A server that refuses {@code CONFIG
         * GET} or {@code INFO} is logged and accepted.
         *
         * @throws LeaseStoreException if Redis cannot be reached
         * @throws IllegalStateException naming the server and what is wrong with it
         */
        public RedisLeaseStore build() {
            if (acknowledgement != null && writerFactory == null) {
                throw new IllegalStateException("replica acknowledgement (WAIT/WAITAOF) is supported on standalone and"
                        + " Sentinel stores only: a cluster connection cannot send WAIT on the connection that wrote"
                        + " the grant");
            }
            Connection opened;
            try {
                opened = connector.get();
            } catch (RedisException e) {
                throw new LeaseStoreException("connect", "(any)", e);
            }
            try {
                check(opened);
            } catch (RuntimeException e) {
                opened.connection().close();
                throw e instanceof RedisException redisFailure
                        ? new LeaseStoreException("connect", "(any)", redisFailure)
                        : e;
            }
            this.connection = opened.connection();
            this.commands = opened.commands();
            return new RedisLeaseStore(this);
        }

        private void check(Connection opened) {
            if (acknowledgement != null
                    && acknowledgement.timeout().compareTo(opened.connection().getTimeout()) >= 0) {
                throw new IllegalStateException("the acknowledgement timeout ("
                        + acknowledgement.timeout().toMillis()
                        + " ms) must be shorter than the client's command timeout ("
                        + opened.connection().getTimeout().toMillis() + " ms), or the client gives up first");
            }
            boolean aof = acknowledgement != null && acknowledgement.aof();
            Map<String, Optional<ServerChecks.Version>> versions = new LinkedHashMap<>();
            opened.servers().get().forEach((server, serverCommands) -> {
                versions.put(
                        server,
                        ServerChecks.checkVersion(
                                server,
                                serverCommands,
                                aof ? ServerChecks.WAITAOF : ServerChecks.MINIMUM,
                                "aofAcknowledgement (WAITAOF)"));
                ServerChecks.checkEviction(server, serverCommands, allowEviction);
            });
            List<String> withoutShardedPubSub = ServerChecks.withoutShardedPubSub(versions);
            sharded = cluster && withoutShardedPubSub.isEmpty();
            if (cluster && !sharded) {
                log.info(
                        "release notices use classic pub/sub, broadcast to every node: sharded pub/sub needs Redis"
                                + " {} or later on every master, and these are older: {}",
                        ServerChecks.SHARDED_PUBSUB,
                        withoutShardedPubSub);
            }
        }
    }
}
