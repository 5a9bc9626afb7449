package dev.leasehold.jdbc;

import dev.leasehold.spi.ReleaseNotice;
import dev.leasehold.spi.ReleaseSubscription;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.function.Consumer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/** The subscribers of one store's release feed: per key, and store-wide for force-releases. */
final class ReleaseSubscribers {

    private static final Logger log = LoggerFactory.getLogger(ReleaseSubscribers.class);

    private final Map<String, CopyOnWriteArrayList<Subscription>> byKey = new ConcurrentHashMap<>();
    private final CopyOnWriteArrayList<Subscription> forceReleases = new CopyOnWriteArrayList<>();

    /** Registers a subscriber of {@code key}'s releases. */
    ReleaseSubscription add(String key, Consumer<ReleaseNotice> callback) {
        Subscription subscription = new Subscription(key, callback);
        byKey.computeIfAbsent(key, k -> new CopyOnWriteArrayList<>()).add(subscription);
        return subscription;
    }

    /** Registers a subscriber of every force-release. */
    ReleaseSubscription addForceReleases(Consumer<ReleaseNotice> callback) {
        Subscription subscription = new Subscription(null, callback);
        forceReleases.add(subscription);
        return subscription;
    }

    /** The keys someone subscribes to. */
    Set<String> keys() {
        return byKey.keySet();
    }

    boolean watchesForceReleases() {
        return !forceReleases.isEmpty();
    }

    /** Tells the key's subscribers. */
    void toKey(ReleaseNotice notice) {
        List<Subscription> subscribers = byKey.get(notice.key());
        if (subscribers != null) {
            subscribers.forEach(s -> s.fire(notice));
        }
    }

    /** Tells the store-wide force-release subscribers. */
    void toForceReleaseSubscribers(ReleaseNotice notice) {
        forceReleases.forEach(s -> s.fire(notice));
    }

    void clear() {
        byKey.clear();
        forceReleases.clear();
    }

    private final class Subscription implements ReleaseSubscription {
        private final String key; // null: force-releases of every key
        private final Consumer<ReleaseNotice> callback;
        private volatile boolean active = true;

        Subscription(String key, Consumer<ReleaseNotice> callback) {
            this.key = key;
            this.callback = callback;
        }

        void fire(ReleaseNotice notice) {
            if (!active) {
                return;
            }
            try {
                callback.accept(notice);
            } catch (RuntimeException e) {
                log.warn("a release callback for {} failed", notice.key(), e);
            }
        }

        @Override
        public void close() {
            active = false;
            if (key == null) {
                forceReleases.remove(this);
            } else {
                byKey.computeIfPresent(key, (k, list) -> {
                    list.remove(this);
                    return list.isEmpty() ? null : list;
                });
            }
        }
    }
}
