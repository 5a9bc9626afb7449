package dev.leasehold.redis;

import dev.leasehold.LeaseStoreException;
import dev.leasehold.LockKey;
import dev.leasehold.spi.ReleaseFanOut;
import dev.leasehold.spi.ReleaseNotice;
import dev.leasehold.spi.ReleaseSubscription;
import io.lettuce.core.RedisException;
import io.lettuce.core.SetArgs;
import io.lettuce.core.cluster.api.sync.RedisClusterCommands;
import io.lettuce.core.pubsub.RedisPubSubAdapter;
import io.lettuce.core.pubsub.StatefulRedisPubSubConnection;
import java.time.Duration;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.Consumer;
import java.util.function.Supplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The release notices of one {@link RedisLeaseStore}: one pub/sub connection, opened on the first
 * subscription, and one server subscription per channel (through a {@link ReleaseFanOut}) however
 * many subscribers in this JVM wait on it. Hand-offs announced on the queue's wake channel are
 * routed to the key channel they name. Thread-safe; callbacks run on the client's I/O thread.
 *
 * <p>While a key channel has subscribers here, the store keeps the key's <em>listening mark</em>
 * ({@link RedisKeys#listening}) in Redis: set once the server confirmed the subscription, before
 * {@link #subscribe} returns, and set again every {@link #MARK_REFRESH} with a TTL of {@link
 * #MARK_TTL}. A release publishes only while the mark exists, so a lock nobody waits for costs no
 * PUBLISH. No wake-up is lost to it: a waiter asks again once its subscription is active (the
 * engine's "subscribe, then ask again"), so a release before the mark was set is seen by that ask,
 * and every later one publishes ({@code
 * RedisReleaseCostTest.aReleaseOfAKeySomeoneWaitsForStillPublishesAndWakesTheWaiter}). A mark
 * outlives its last subscriber by its TTL at most.
 */
final class RedisNotices implements ReleaseFanOut.Server {

    private static final Logger log = LoggerFactory.getLogger(RedisNotices.class);

    /** How long a listening mark lasts unless set again. */
    static final Duration MARK_TTL = Duration.ofSeconds(30);
    /** How often the marks of the subscribed keys are set again: a third of their TTL. */
    static final Duration MARK_REFRESH = MARK_TTL.dividedBy(3);

    private final Supplier<StatefulRedisPubSubConnection<String, String>> pubSubFactory;
    private final RedisKeys keys;
    private final RedisWaiterQueue queue;
    private final boolean sharded;
    private final ReleaseFanOut byChannel = new ReleaseFanOut(this);
    private final RedisClusterCommands<String, String> marks; // the store's commands: listening marks
    // written under connection, started with the first mark; read without it to mark a channel again
    private volatile ScheduledExecutorService refresher;

    private final ReentrantLock connection = new ReentrantLock(); // orders the commands of the pub/sub connection
    // written under connection; read without it only by the listener, to subscribe again
    private volatile StatefulRedisPubSubConnection<String, String> pubSub;
    private boolean wakeChannelSubscribed; // guarded by connection
    private volatile boolean closed;

    /**
     * @param sharded whether key channels are shard channels ({@code SSUBSCRIBE} on the node of
     *     the key's slot)
     */
    RedisNotices(
            Supplier<StatefulRedisPubSubConnection<String, String>> pubSubFactory,
            RedisKeys keys,
            RedisWaiterQueue queue,
            boolean sharded,
            RedisClusterCommands<String, String> marks) {
        this.pubSubFactory = pubSubFactory;
        this.marks = marks;
        this.keys = keys;
        this.queue = queue;
        this.sharded = sharded;
    }

    /** Whether someone in this store is subscribed to the key's releases: its waiters wait for it. */
    boolean waitsFor(LockKey key) {
        // Asked on every acquire: while nothing is subscribed, without naming the key's channel.
        return !byChannel.isEmpty() && byChannel.keys().contains(keys.channel(key));
    }

    /**
     * The key's releases and force-releases; returns once the server confirmed the subscription.
     *
     * @throws LeaseStoreException naming the key if Redis refuses or cannot be reached
     */
    ReleaseSubscription subscribe(LockKey key, Consumer<ReleaseNotice> onRelease) {
        return subscribe(keys.channel(key), key.render(), onRelease);
    }

    /** Every force-release of the store's keys, from the store-wide channel (classic pub/sub everywhere). */
    ReleaseSubscription subscribeForceReleases(Consumer<ReleaseNotice> onForceRelease) {
        return subscribe(keys.forceReleaseChannel(), "(force-releases)", onForceRelease);
    }

    /** Closes the pub/sub connection and drops every subscription. */
    void close() {
        connection.lock();
        try {
            if (pubSub != null) {
                pubSub.close();
                pubSub = null;
            }
            wakeChannelSubscribed = false;
            if (refresher != null) {
                refresher.shutdownNow();
                refresher = null;
            }
        } finally {
            connection.unlock();
        }
        byChannel.closeAll();
        closed = true;
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

    private ReleaseSubscription subscribe(String channel, String what, Consumer<ReleaseNotice> onRelease) {
        try {
            return byChannel.subscribe(channel, onRelease);
        } catch (RedisException e) {
            throw new LeaseStoreException("subscribe to releases", what, e);
        }
    }

    private boolean shardChannel(String channel) {
        return sharded && !channel.equals(keys.forceReleaseChannel());
    }

    /** A channel's first subscriber: returns once the server confirmed, so a later release is delivered. */
    @Override
    public void open(String channel) {
        connection.lock();
        try {
            if (!queue.sharded() && !wakeChannelSubscribed) {
                pubSub().sync().subscribe(queue.wakeChannel()); // hand-offs to this store's waiters
                wakeChannelSubscribed = true;
            }
            // A shard channel is subscribed on the node that serves its slot (Lettuce routes it).
            if (shardChannel(channel)) {
                pubSub().sync().ssubscribe(channel);
            } else {
                pubSub().sync().subscribe(channel);
            }
            if (!channel.equals(keys.forceReleaseChannel())) {
                mark(channel); // after the subscription: from now on a release publishes, and is heard
                if (refresher == null) {
                    refresher = Executors.newSingleThreadScheduledExecutor(runnable -> {
                        Thread thread = new Thread(runnable, "leasehold-redis-marks");
                        thread.setDaemon(true);
                        return thread;
                    });
                    long period = MARK_REFRESH.toMillis();
                    refresher.scheduleWithFixedDelay(this::refreshMarks, period, period, TimeUnit.MILLISECONDS);
                }
            }
        } finally {
            connection.unlock();
        }
    }

    /** A channel's last subscriber left. */
    @Override
    public void close(String channel) {
        connection.lock();
        try {
            if (pubSub != null) {
                // Issued under the lock, so it reaches the server before any later SUBSCRIBE.
                if (shardChannel(channel)) {
                    pubSub.async().sunsubscribe(channel);
                } else {
                    pubSub.async().unsubscribe(channel);
                }
            }
        } finally {
            connection.unlock();
        }
    }

    private void mark(String channel) {
        marks.set(keys.listeningOfChannel(channel), "1", SetArgs.Builder.px(MARK_TTL.toMillis()));
    }

    /** Sets the marks of the subscribed key channels again; a failure waits for the next round. */
    private void refreshMarks() {
        for (String channel : byChannel.keys()) {
            if (closed || channel.equals(keys.forceReleaseChannel()) || !byChannel.hasListeners(channel)) {
                continue;
            }
            refreshMark(channel);
        }
    }

    private void refreshMark(String channel) {
        try {
            mark(channel);
        } catch (RuntimeException e) {
            log.warn(
                    "could not mark {} as listened to: {}; its releases may not publish until the next"
                            + " round, and its waiters fall back to their bounded poll",
                    channel,
                    e.getMessage());
        }
    }

    private StatefulRedisPubSubConnection<String, String> pubSub() {
        if (pubSub == null) {
            StatefulRedisPubSubConnection<String, String> connection = pubSubFactory.get();
            connection.addListener(new RedisPubSubAdapter<>() {
                @Override
                public void message(String channel, String message) {
                    String[] routed = channel.equals(queue.wakeChannel())
                            ? queue.route(message)
                            : new String[] {channel, message};
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
     * subscribed again, where the slot now is, and its listening mark set there again (a slot
     * moved without its keys has none). Runs on the client's I/O thread: takes no lock and does
     * not wait.
     */
    private void subscribeAgainIfWanted(String shardChannel) {
        StatefulRedisPubSubConnection<String, String> current = pubSub;
        if (closed || current == null || !byChannel.hasListeners(shardChannel)) {
            return;
        }
        try {
            current.async().ssubscribe(shardChannel).whenComplete((done, failure) -> {
                ScheduledExecutorService marking = refresher;
                if (failure == null && marking != null) {
                    // the slot's new node has no mark yet: set it there (never on this I/O thread)
                    marking.execute(() -> refreshMark(shardChannel));
                }
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
        if (!byChannel.hasListeners(channel)) {
            return;
        }
        ReleaseNotice notice;
        try {
            notice = channel.equals(keys.forceReleaseChannel())
                    ? forceNotice(message)
                    : keyNotice(keys.renderedOfChannel(channel), message);
        } catch (RuntimeException e) {
            log.warn("an unreadable release message on {}: {}", channel, message, e);
            return;
        }
        byChannel.publish(channel, notice);
    }
}
