package dev.leasehold.redis;

import dev.leasehold.LeaseStoreException;
import dev.leasehold.LockKey;
import dev.leasehold.spi.ReleaseNotice;
import dev.leasehold.spi.ReleaseSubscription;
import io.lettuce.core.RedisException;
import io.lettuce.core.pubsub.RedisPubSubAdapter;
import io.lettuce.core.pubsub.StatefulRedisPubSubConnection;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.Consumer;
import java.util.function.Function;
import java.util.function.Supplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The release notices of one {@link RedisLeaseStore}: one pub/sub connection, opened on the first
 * subscription, and one server subscription per channel however many subscribers in this JVM wait
 * on it. Hand-offs announced on the queue's wake channel are routed to the key channel they name.
 * Thread-safe; callbacks run on the client's I/O thread, and one that throws is logged.
 */
final class RedisNotices {

    private static final Logger log = LoggerFactory.getLogger(RedisNotices.class);

    private final Supplier<StatefulRedisPubSubConnection<String, String>> pubSubFactory;
    private final RedisKeys keys;
    private final RedisWaiterQueue queue;
    private final boolean sharded;

    private final ReentrantLock subscriptions = new ReentrantLock();
    private final ConcurrentHashMap<String, CopyOnWriteArrayList<Subscription>> byChannel = new ConcurrentHashMap<>();
    // written under subscriptions; read without it only by the listener, to subscribe again
    private volatile StatefulRedisPubSubConnection<String, String> pubSub;
    private boolean wakeChannelSubscribed; // guarded by subscriptions
    private volatile boolean closed;

    /**
     * @param sharded whether key channels are shard channels ({@code SSUBSCRIBE} on the node of
     *     the key's slot)
     */
    RedisNotices(
            Supplier<StatefulRedisPubSubConnection<String, String>> pubSubFactory,
            RedisKeys keys,
            RedisWaiterQueue queue,
            boolean sharded) {
        this.pubSubFactory = pubSubFactory;
        this.keys = keys;
        this.queue = queue;
        this.sharded = sharded;
    }

    /** Whether someone in this store is subscribed to the key's releases: its waiters wait for it. */
    boolean waitsFor(LockKey key) {
        return byChannel.containsKey(keys.channel(key));
    }

    /**
     * The key's releases and force-releases; returns once the server confirmed the subscription.
     *
     * @throws LeaseStoreException naming the key if Redis refuses or cannot be reached
     */
    ReleaseSubscription subscribe(LockKey key, Consumer<ReleaseNotice> onRelease) {
        String rendered = key.render();
        return subscribe(keys.channel(key), sharded, rendered, message -> keyNotice(rendered, message), onRelease);
    }

    /** Every force-release of the store's keys, from the store-wide channel (classic pub/sub everywhere). */
    ReleaseSubscription subscribeForceReleases(Consumer<ReleaseNotice> onForceRelease) {
        return subscribe(
                keys.forceReleaseChannel(), false, "(force-releases)", RedisNotices::forceNotice, onForceRelease);
    }

    /** Closes the pub/sub connection and drops every subscription. */
    void close() {
        subscriptions.lock();
        try {
            if (pubSub != null) {
                pubSub.close();
                pubSub = null;
            }
            wakeChannelSubscribed = false;
            byChannel.clear();
        } finally {
            subscriptions.unlock();
        }
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
                    if (!queue.sharded() && !wakeChannelSubscribed) {
                        pubSub().sync().subscribe(queue.wakeChannel()); // hand-offs to this store's waiters
                        wakeChannelSubscribed = true;
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
     * subscribed again, where the slot now is. Runs on the client's I/O thread: takes no lock and
     * does not wait.
     */
    private void subscribeAgainIfWanted(String shardChannel) {
        CopyOnWriteArrayList<Subscription> list = byChannel.get(shardChannel);
        StatefulRedisPubSubConnection<String, String> connection = pubSub;
        if (closed || connection == null || list == null || list.isEmpty()) {
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

    private final class Subscription implements ReleaseSubscription {
        private final String channel;
        private final boolean shardChannel;
        private final Function<String, ReleaseNotice> decoder;
        private final Consumer<ReleaseNotice> onRelease;
        private boolean ended; // guarded by subscriptions

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
                if (ended) {
                    return;
                }
                ended = true;
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
}
