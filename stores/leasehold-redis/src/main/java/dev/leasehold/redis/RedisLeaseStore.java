package dev.leasehold.redis;

import static dev.leasehold.redis.RedisReplies.acquireResult;
import static dev.leasehold.redis.RedisReplies.asLong;

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
import dev.leasehold.spi.Renewal;
import dev.leasehold.spi.WaiterPolicy;
import io.lettuce.core.RedisClient;
import io.lettuce.core.ScriptOutputType;
import io.lettuce.core.api.StatefulConnection;
import io.lettuce.core.api.StatefulRedisConnection;
import io.lettuce.core.cluster.RedisClusterClient;
import io.lettuce.core.cluster.api.StatefulRedisClusterConnection;
import io.lettuce.core.cluster.api.async.RedisClusterAsyncCommands;
import io.lettuce.core.cluster.api.sync.RedisClusterCommands;
import java.time.Duration;
import java.util.List;
import java.util.Objects;
import java.util.Optional;
import java.util.concurrent.CompletionStage;
import java.util.function.Consumer;
import java.util.function.Supplier;
import java.util.regex.Pattern;

/**
 * A {@link LeaseStore} on Redis through Lettuce: standalone, Sentinel (a {@link RedisClient} with a
 * sentinel URI) or Cluster (a {@link RedisClusterClient}).
 *
 * <p>Every operation is one Lua script, atomic on the server; expiry is the server's. Fences
 * strictly increase per key while the server's clock does not go back. Waiters of several
 * processes queue in Redis by the {@link WaiterPolicy} of the fair mode (the default, {@link
 * Builder#fairQueue}) or of {@link Builder#bargingBound}; leases survive a failover only with
 * {@link Builder#replicaAcknowledgement}.
 * The protocol is in {@code docs/design/redis.md}. Thread-safe; Lettuce's command timeout bounds
 * every call, and a failure is a {@link LeaseStoreException} naming the key.
 */
public final class RedisLeaseStore implements LeaseStore {

    private static final Pattern PREFIX = Pattern.compile("[A-Za-z0-9_.:\\-]{1,64}");

    /** How long a fence counter stays past its key's last fence unless the builder says otherwise. */
    public static final Duration DEFAULT_FENCE_COUNTER_TTL = Duration.ofSeconds(60);

    private static final Script FORCE_RELEASE = Script.load("force-release");

    /**
     * How long a place in a key's queue lasts after its waiter's last ask in the fair mode, the
     * default, unless {@link Builder#fairQueue} says otherwise: a queued waiter that crashed holds
     * the key up for at most this long
     * ({@code RedisFairQueueTest.byDefaultACrashedQueuedWaiterHoldsTheKeyUpForAtMostTheDefaultQueueTtl}).
     */
    public static final Duration DEFAULT_FAIR_QUEUE_TTL = Duration.ofSeconds(2);

    /**
     * How long a waiter barges before it takes a place in the key's queue in the bounded barging
     * mode ({@link Builder#bargingBound(Duration)}).
     */
    public static final Duration DEFAULT_BARGING_BOUND = Duration.ofMillis(50);

    /** How long a place of the bounded barging mode's queue lasts after its waiter's last ask, unless the builder says otherwise. */
    public static final Duration DEFAULT_BARGING_QUEUE_TTL = Duration.ofMillis(300);

    private final StatefulConnection<String, String> connection;
    private final RedisClusterCommands<String, String> redis;
    private final RedisClusterAsyncCommands<String, String> async; // the same connection: waiting acquires, leaves
    private final String counterTtl;
    private final RedisWrites writes;
    private final RedisKeys keys;
    private final String name;
    private final RedisWaiterQueue queue; // the fair mode (the default), or bounded barging (Builder.bargingBound)
    private final RedisBatch batches;
    private final RedisRenewals renewals;
    private final boolean sharded;
    private final String publish;
    private final RedisNotices notices;
    private final RedisReads reads;

    private RedisLeaseStore(Builder builder, RedisConnector.Opened opened) {
        this.connection = opened.connection();
        this.redis = opened.commands();
        this.async = connection instanceof StatefulRedisConnection<String, String> standalone
                ? standalone.async()
                : connection instanceof StatefulRedisClusterConnection<String, String> cluster ? cluster.async() : null;
        this.counterTtl = Long.toString(builder.fenceCounterTtl.toMillis());
        this.writes = new RedisWrites(
                redis,
                builder.acknowledgement == null
                        ? null
                        : new ReplicaAcknowledgement(builder.acknowledgement, builder.connector.writerFactory()));
        this.keys = new RedisKeys(builder.keyPrefix);
        this.name = builder.connector.name();
        this.sharded = opened.sharded();
        this.publish = sharded ? "SPUBLISH" : "PUBLISH";
        boolean fair = !builder.barging;
        this.queue = new RedisWaiterQueue(
                builder.keyPrefix,
                fair ? builder.fairQueueTtl : builder.bargingQueueTtl,
                builder.acknowledgement == null,
                sharded,
                fair ? WaiterPolicy.fairQueue() : WaiterPolicy.bargingFor(builder.bargingBound));
        this.notices = new RedisNotices(builder.connector.pubSubFactory(), keys, queue, sharded, redis);
        this.reads = new RedisReads(redis, keys);
        this.batches = new RedisBatch(writes, keys, builder.connector.cluster(), counterTtl, this::runRelease);
        this.renewals = new RedisRenewals(writes, keys, builder.connector.cluster(), async, connection.getTimeout());
        Script.preload(
                redis,
                queue.acquireScript(),
                queue.releaseScript(),
                RedisBatch.ACQUIRE_ALL,
                RedisRenewals.RENEW,
                RedisRenewals.RENEW_ALL,
                FORCE_RELEASE,
                RedisReads.INSPECT);
    }

    /** A builder for a store on a standalone or Sentinel-managed Redis. */
    public static Builder builder(RedisClient client) {
        Objects.requireNonNull(client, "client is missing (null)");
        return new Builder(RedisConnector.standalone(client));
    }

    /** A builder for a store on a Redis Cluster. */
    public static Builder builder(RedisClusterClient client) {
        Objects.requireNonNull(client, "client is missing (null)");
        return new Builder(RedisConnector.cluster(client));
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
        List<Object> reply = writes.write(
                "acquire",
                key.render(),
                commands -> queue.acquire(
                        commands,
                        keys,
                        key,
                        owner,
                        millis,
                        counterTtl,
                        request == null && notices.waitsFor(key), // asked only without a request
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

    /**
     * Whether the acquire script can be sent without a thread waiting for it: on a connection with
     * asynchronous commands, and without a replica acknowledgement (whose wait blocks).
     */
    @Override
    public boolean acquiresAsynchronously() {
        return async != null && !writes.acknowledged();
    }

    /** The acquire script sent without a thread waiting for it; only a waiter takes a place. */
    @Override
    public CompletionStage<AcquireResult> tryAcquireAsync(AcquireRequest request) {
        if (!acquiresAsynchronously()) {
            throw new UnsupportedOperationException(
                    writes.acknowledged()
                            ? "a store that waits for replica acknowledgement has no asynchronous acquire"
                            : "this store's connection has no asynchronous commands");
        }
        checkOwner(request.key(), request.owner());
        return queue.acquireAsync(
                async, keys, request.key(), request.owner(), millis(request.leaseFor()), counterTtl, request);
    }

    /**
     * The batch in one script per cluster slot among its keys, all or nothing, in either mode; it
     * never passes a waiter queued in Redis and never takes a place. A batch refused for want of a
     * replica acknowledgement undoes only its new grants.
     */
    @Override
    public BatchAcquireResult tryAcquireAll(List<LockKey> batch, String owner, Duration leaseFor) {
        LeaseStore.checkBatch(batch);
        batch.forEach(key -> checkOwner(key, owner));
        return batches.acquire(batch, owner, leaseFor, millis(leaseFor));
    }

    @Override
    public Optional<Grant> renew(LockKey key, String owner, Duration leaseFor) {
        checkOwner(key, owner);
        return renewals.renew(key, owner, millis(leaseFor));
    }

    /** One {@code renew-all} script per slot among the batch's keys (one off a cluster). */
    @Override
    public List<Optional<Grant>> renewAll(List<Renewal> batch) {
        batch.forEach(renewal -> checkOwner(renewal.key(), renewal.owner()));
        return renewals.renew(batch);
    }

    @Override
    public int renewalBatchLimit() {
        return RedisRenewals.BATCH_LIMIT;
    }

    @Override
    public boolean release(LockKey key, String owner) {
        checkOwner(key, owner);
        Long released = call("release", key, () -> runRelease(key, owner));
        return released != null && released == 1;
    }

    /**
     * Drops the place of a waiter that gave up, and gives a key handed to it to the next waiter.
     * Sent without waiting for the replies (later commands of this store reach Redis after it; a
     * failure is logged); with a replica acknowledgement it is a write that is waited for like a
     * grant, and a shortfall throws {@link ReplicaAcknowledgementException}.
     */
    @Override
    public void leaveQueue(LockKey key, String owner) {
        checkOwner(key, owner);
        queue.leave(writes, redis, async, keys, key, owner, counterTtl);
    }

    /**
     * Whether {@link #leaveQueue} only sends: on a connection with asynchronous commands, and
     * without a replica acknowledgement (whose wait blocks).
     */
    @Override
    public boolean leavesQueueWithoutBlocking() {
        return async != null && !writes.acknowledged();
    }

    private Long runRelease(LockKey key, String owner) {
        return queue.release(redis, keys, key, owner, counterTtl);
    }

    @Override
    public Optional<LeaseInfo> inspect(LockKey key) {
        return reads.inspect(key);
    }

    /** Scans for lease keys (SCAN, every node of a cluster), then inspects each one. */
    @Override
    public List<LeaseInfo> list(String namespace, int limit) {
        return reads.list(namespace, limit);
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
        return notices.subscribe(key, onRelease);
    }

    /** Every force-release of this store's keys, from the store-wide channel. */
    @Override
    public ReleaseSubscription subscribeForceReleases(Consumer<ReleaseNotice> onForceRelease) {
        Objects.requireNonNull(onForceRelease, "onForceRelease is missing (null)");
        return notices.subscribeForceReleases(onForceRelease);
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
        notices.close();
        writes.close();
        connection.close();
    }

    private static <T> T call(String operation, LockKey key, Supplier<T> command) {
        return RedisReads.call(operation, key.render(), command);
    }

    private static void checkOwner(LockKey key, String owner) {
        Objects.requireNonNull(key, "key is missing (null)");
        OwnerTokens.check(owner);
    }

    private static String millis(Duration leaseFor) {
        Objects.requireNonNull(leaseFor, "leaseFor is missing (null)");
        if (leaseFor.toMillis() < 1) {
            throw new IllegalArgumentException("leaseFor must be at least 1 ms for Redis, was " + leaseFor);
        }
        return Long.toString(leaseFor.toMillis());
    }

    /** Builds a {@link RedisLeaseStore}; opens its command connection and checks the servers in {@link #build()}. */
    public static final class Builder {
        private final RedisConnector connector;
        private String keyPrefix = "leasehold:";
        private Duration fenceCounterTtl = DEFAULT_FENCE_COUNTER_TTL;
        private boolean allowEviction;
        private ReplicaAcknowledgement.Policy acknowledgement;
        private Duration fairQueueTtl = DEFAULT_FAIR_QUEUE_TTL;
        private boolean barging;
        private Duration bargingBound = DEFAULT_BARGING_BOUND;
        private Duration bargingQueueTtl = DEFAULT_BARGING_QUEUE_TTL;

        private Builder(RedisConnector connector) {
            this.connector = connector;
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
         * How long a key's fence counter stays once the server's clock has passed the key's last
         * fence (default {@link #DEFAULT_FENCE_COUNTER_TTL}, at least 1 s), so that keys used once
         * leave nothing in Redis about that long after their last grant; fences stay increasing
         * when it expires. The limits on Redis below 7 are in {@code docs/design/redis.md}.
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
         * The fair mode, the default, with a queue TTL of its own (default {@link
         * #DEFAULT_FAIR_QUEUE_TTL}): a refused waiter of any process queues in Redis per key at
         * once, in arrival order, and a release hands the key to the first live waiter in the same
         * script. A waiter keeps its place while it asks again within {@code queueTtl} (100 ms to
         * 1 h; the store tells a queued waiter to ask at least three times per TTL); one that
         * crashed holds the queue up for at most that long. Every process using a key must use the
         * same mode. Replaces an earlier {@link #bargingBound}.
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
            this.barging = false;
            return this;
        }

        /**
         * Bounded barging instead of the default fair mode: any caller may take a free key, but a waiter refused for longer than {@code bound} (default {@link
         * #DEFAULT_BARGING_BOUND}) takes a place in the key's queue in Redis, and while a live
         * waiter is queued the key goes only to the first one, so waiters in other processes never
         * starve. A single try never takes a place. A place lasts {@code queueTtl} (default {@link
         * #DEFAULT_BARGING_QUEUE_TTL}) after its waiter's last ask, so a waiter that crashed or gave
         * up holds the key up for at most that long. Bound 1 ms to 1 min; queue TTL 30 ms to 1 min.
         * Replaces an earlier {@link #fairQueue}; every process using a key must use the same mode.
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
            this.barging = true;
            return this;
        }

        /** {@link #bargingBound(Duration, Duration)} with the queue TTL {@link #DEFAULT_BARGING_QUEUE_TTL}. */
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
            this.acknowledgement = ReplicaAcknowledgement.Policy.of(false, 0, replicas, timeout);
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
            this.acknowledgement = ReplicaAcknowledgement.Policy.of(true, local, replicas, timeout);
            return this;
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
            if (acknowledgement != null && connector.writerFactory() == null) {
                throw new IllegalStateException("replica acknowledgement (WAIT/WAITAOF) is supported on standalone and"
                        + " Sentinel stores only: a cluster connection cannot send WAIT on the connection that wrote"
                        + " the grant");
            }
            return new RedisLeaseStore(this, connector.open(acknowledgement, allowEviction));
        }
    }
}
