package dev.leasehold.redis;

import dev.leasehold.LeaseInfo;
import dev.leasehold.LeaseStoreException;
import dev.leasehold.LockKey;
import dev.leasehold.spi.AcquireResult;
import dev.leasehold.spi.Grant;
import dev.leasehold.spi.LeaseStore;
import dev.leasehold.spi.ReleaseNotice;
import dev.leasehold.spi.ReleaseSubscription;
import io.lettuce.core.RedisClient;
import io.lettuce.core.RedisException;
import io.lettuce.core.ScanArgs;
import io.lettuce.core.ScanIterator;
import io.lettuce.core.ScriptOutputType;
import io.lettuce.core.api.StatefulConnection;
import io.lettuce.core.api.StatefulRedisConnection;
import io.lettuce.core.api.sync.RedisKeyCommands;
import io.lettuce.core.api.sync.RedisScriptingCommands;
import io.lettuce.core.cluster.RedisClusterClient;
import io.lettuce.core.cluster.api.StatefulRedisClusterConnection;
import io.lettuce.core.pubsub.RedisPubSubAdapter;
import io.lettuce.core.pubsub.StatefulRedisPubSubConnection;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.Optional;
import java.util.TreeSet;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.Consumer;
import java.util.function.Function;
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
 *       expiry is the server's clock) or already held by the same owner; a new grant takes the next
 *       value of a per-key fence counter that has no TTL;
 *   <li>renew: compare-and-{@code PEXPIRE}; release: compare-and-delete, then {@code PUBLISH} a
 *       wake-up; force-release: delete and publish; inspect: owner, fence and TTL read at once.
 * </ul>
 *
 * <p>Fences: a fence counter that is missing (first use, or lost because Redis restarted without
 * persistence, or evicted) starts at the server's time in milliseconds times 1000, so fences never
 * go backwards across such a loss as long as the server's clock does not. Run Redis with AOF
 * ({@code appendonly yes}) to keep counters exact; nothing else is needed for safety.
 *
 * <p>Wake-ups: one pub/sub connection per store, one subscription per channel however many waiters
 * in this JVM wait for it (the engine queues them). A lost message costs a waiter at most the
 * holder's remaining lease, the engine's bounded poll.
 *
 * <p>Thread-safe; the command connection is shared and pipelines concurrent calls. Lettuce's
 * command timeout (from the {@code RedisURI}) bounds every call; a failure or timeout is a {@link
 * LeaseStoreException} naming the key.
 */
public final class RedisLeaseStore implements LeaseStore {

    private static final Logger log = LoggerFactory.getLogger(RedisLeaseStore.class);
    private static final Pattern PREFIX = Pattern.compile("[A-Za-z0-9_.:\\-]{1,64}");

    private static final Script ACQUIRE = Script.load("acquire");
    private static final Script RENEW = Script.load("renew");
    private static final Script RELEASE = Script.load("release");
    private static final Script FORCE_RELEASE = Script.load("force-release");
    private static final Script INSPECT = Script.load("inspect");

    private final StatefulConnection<String, String> connection;
    private final RedisScriptingCommands<String, String> redis;
    private final RedisKeyCommands<String, String> keyCommands;
    private final String keyPrefix;
    private final Supplier<StatefulRedisPubSubConnection<String, String>> pubSubFactory;
    private final RedisKeys keys;
    private final String name;
    private final FairQueue fair; // null unless Builder.fairQueue

    private final ReentrantLock subscriptions = new ReentrantLock();
    private final ConcurrentHashMap<String, CopyOnWriteArrayList<Subscription>> byChannel = new ConcurrentHashMap<>();
    private StatefulRedisPubSubConnection<String, String> pubSub; // guarded by subscriptions

    private RedisLeaseStore(Builder builder) {
        this.connection = builder.connection;
        this.redis = builder.commands;
        this.keyCommands = builder.keyCommands;
        this.keyPrefix = builder.keyPrefix;
        this.pubSubFactory = builder.pubSubFactory;
        this.keys = new RedisKeys(builder.keyPrefix);
        this.name = builder.name;
        this.fair = builder.fairQueueTtl == null ? null : new FairQueue(builder.keyPrefix, builder.fairQueueTtl);
        for (Script script :
                List.of(ACQUIRE, RENEW, RELEASE, FORCE_RELEASE, INSPECT, FairQueue.ACQUIRE, FairQueue.RELEASE)) {
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
                    return new Builder.Connection(connection, connection.sync(), connection.sync());
                },
                client::connectPubSub,
                "redis");
    }

    /** A builder for a store on a Redis Cluster. */
    public static Builder builder(RedisClusterClient client) {
        Objects.requireNonNull(client, "client is missing (null)");
        return new Builder(
                () -> {
                    StatefulRedisClusterConnection<String, String> connection = client.connect();
                    return new Builder.Connection(connection, connection.sync(), connection.sync());
                },
                client::connectPubSub,
                "redis-cluster");
    }

    @Override
    public AcquireResult tryAcquire(LockKey key, String owner, Duration leaseFor) {
        checkOwner(key, owner);
        String millis = millis(leaseFor);
        List<Object> reply = call(
                "acquire",
                key,
                () -> fair != null
                        ? fair.acquire(redis, keys, key, owner, millis)
                        : ACQUIRE.run(
                                redis,
                                ScriptOutputType.MULTI,
                                new String[] {keys.lease(key), keys.fence(key)},
                                owner,
                                millis));
        if (asLong(reply.get(0)) == 1) {
            return new AcquireResult.Granted(grant(reply, 1));
        }
        return new AcquireResult.Busy(Duration.ofMillis(Math.max(0, asLong(reply.get(1)))));
    }

    @Override
    public Optional<Grant> renew(LockKey key, String owner, Duration leaseFor) {
        checkOwner(key, owner);
        String millis = millis(leaseFor);
        List<Object> reply = call(
                "renew",
                key,
                () -> RENEW.run(redis, ScriptOutputType.MULTI, new String[] {keys.lease(key)}, owner, millis));
        return reply.isEmpty() ? Optional.empty() : Optional.of(grant(reply, 0));
    }

    @Override
    public boolean release(LockKey key, String owner) {
        checkOwner(key, owner);
        Long released = call(
                "release",
                key,
                () -> fair != null
                        ? fair.release(redis, keys, key, owner)
                        : RELEASE.run(
                                redis,
                                ScriptOutputType.INTEGER,
                                new String[] {keys.lease(key)},
                                owner,
                                keys.channel(key)));
        return released != null && released == 1;
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
        String pattern = glob(keyPrefix) + "\\{" + glob(namespace) + ":*\\}";
        TreeSet<String> rendered = new TreeSet<>();
        try {
            ScanIterator<String> scan = ScanIterator.scan(
                    keyCommands, ScanArgs.Builder.matches(pattern).limit(500));
            while (scan.hasNext() && rendered.size() < limit) {
                String leaseKey = scan.next();
                rendered.add(leaseKey.substring(leaseKey.indexOf('{') + 1, leaseKey.lastIndexOf('}')));
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

    /** Escapes the glob characters of SCAN MATCH. */
    private static String glob(String text) {
        StringBuilder escaped = new StringBuilder();
        for (char c : text.toCharArray()) {
            if (c == '*' || c == '?' || c == '[' || c == ']' || c == '\\') {
                escaped.append('\\');
            }
            escaped.append(c);
        }
        return escaped.toString();
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
                        key.render()));
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
        return subscribe(keys.channel(key), rendered, message -> keyNotice(rendered, message), onRelease);
    }

    /** Every force-release of this store's keys, from the store-wide channel. */
    @Override
    public ReleaseSubscription subscribeForceReleases(Consumer<ReleaseNotice> onForceRelease) {
        Objects.requireNonNull(onForceRelease, "onForceRelease is missing (null)");
        return subscribe(keys.forceReleaseChannel(), "(force-releases)", RedisLeaseStore::forceNotice, onForceRelease);
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
            String channel, String what, Function<String, ReleaseNotice> decoder, Consumer<ReleaseNotice> onRelease) {
        Subscription subscription = new Subscription(channel, decoder, onRelease);
        subscriptions.lock();
        try {
            CopyOnWriteArrayList<Subscription> list =
                    byChannel.computeIfAbsent(channel, c -> new CopyOnWriteArrayList<>());
            boolean first = list.isEmpty();
            list.add(subscription);
            if (first) {
                try {
                    // Returns once the server confirmed: a release published after this is delivered.
                    if (fair != null && !fair.subscribed) {
                        pubSub().sync().subscribe(fair.wakeChannel); // hand-offs to this store's waiters
                        fair.subscribed = true;
                    }
                    pubSub().sync().subscribe(channel);
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
                    String[] routed = fair != null && channel.equals(fair.wakeChannel)
                            ? FairQueue.route(message)
                            : new String[] {channel, message};
                    CopyOnWriteArrayList<Subscription> list = byChannel.get(routed[0]);
                    if (list != null) {
                        list.forEach(subscription -> subscription.fire(routed[1]));
                    }
                }
            });
            pubSub = connection;
        }
        return pubSub;
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
            if (fair != null) {
                fair.subscribed = false;
            }
            byChannel.clear();
        } finally {
            subscriptions.unlock();
        }
        connection.close();
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
        if (owner == null || owner.isBlank()) {
            throw new IllegalArgumentException("owner token is missing or blank");
        }
    }

    private static String millis(Duration leaseFor) {
        Objects.requireNonNull(leaseFor, "leaseFor is missing (null)");
        if (leaseFor.toMillis() < 1) {
            throw new IllegalArgumentException("leaseFor must be at least 1 ms for Redis, was " + leaseFor);
        }
        return Long.toString(leaseFor.toMillis());
    }

    private final class Subscription implements ReleaseSubscription {
        private final String channel;
        private final Function<String, ReleaseNotice> decoder;
        private final Consumer<ReleaseNotice> onRelease;
        private boolean closed; // guarded by subscriptions

        Subscription(String channel, Function<String, ReleaseNotice> decoder, Consumer<ReleaseNotice> onRelease) {
            this.channel = channel;
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
                        pubSub.async().unsubscribe(channel);
                    }
                }
            } finally {
                subscriptions.unlock();
            }
        }
    }

    /** Builds a {@link RedisLeaseStore}; opens its command connection in {@link #build()}. */
    public static final class Builder {
        record Connection(
                StatefulConnection<String, String> connection,
                RedisScriptingCommands<String, String> commands,
                RedisKeyCommands<String, String> keys) {}

        private final Supplier<Connection> connector;
        private final Supplier<StatefulRedisPubSubConnection<String, String>> pubSubFactory;
        private final String name;
        private String keyPrefix = "leasehold:";
        private Duration fairQueueTtl;
        private StatefulConnection<String, String> connection;
        private RedisScriptingCommands<String, String> commands;
        private RedisKeyCommands<String, String> keyCommands;

        private Builder(
                Supplier<Connection> connector,
                Supplier<StatefulRedisPubSubConnection<String, String>> pubSubFactory,
                String name) {
            this.connector = connector;
            this.pubSubFactory = pubSubFactory;
            this.name = name;
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
         * Fair mode: waiters of every process queue in Redis per key, in arrival order, and a release
         * hands the key to the first live waiter in the same script and wakes only that waiter's
         * store. A waiter keeps its place while it asks again within {@code queueTtl}; one that
         * crashed holds the queue up for at most that long (RedisFairQueueTest). A place is taken
         * on the second ask with the same owner token, so a single try never queues; today that
         * means only acquires with an explicit {@link dev.leasehold.LockOwner} queue, as the lock
         * service draws a new token per attempt for thread owners. Every process using a key must
         * use the same mode. 100 ms to 1 h.
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
         * Connects and returns the store.
         *
         * @throws LeaseStoreException if Redis cannot be reached
         */
        public RedisLeaseStore build() {
            try {
                Connection opened = connector.get();
                this.connection = opened.connection();
                this.commands = opened.commands();
                this.keyCommands = opened.keys();
            } catch (RedisException e) {
                throw new LeaseStoreException("connect", "(any)", e);
            }
            return new RedisLeaseStore(this);
        }
    }
}
