package dev.leasehold.spi;

import java.util.List;
import java.util.Objects;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.Consumer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The local listeners of a store's release notices, per key (any string a store chooses: a rendered
 * key, a channel name). A store keeps one server-side subscription per key however many listeners
 * wait on it: {@link Server#open} runs before a key's first listener is added, {@link Server#close}
 * after its last one left, and a key's opens and closes never overlap, so the server sees them in
 * order. A listener that throws is logged and the others still run. Thread-safe.
 */
public final class ReleaseFanOut {

    private static final Logger log = LoggerFactory.getLogger(ReleaseFanOut.class);

    /** What a store does at the server when a key gains its first listener or loses its last. */
    public interface Server {

        /**
         * Subscribes at the server; returns once notices of the key are delivered. A throw refuses
         * the subscription and reaches the subscriber.
         */
        void open(String key);

        /** Ends the key's server subscription; must not throw. */
        void close(String key);
    }

    /** For a store whose notices need no server-side subscription. */
    private static final Server LOCAL = new Server() {
        @Override
        public void open(String key) {}

        @Override
        public void close(String key) {}
    };

    private final Server server;
    private final ConcurrentHashMap<String, Topic> topics = new ConcurrentHashMap<>();

    /** A fan-out whose keys need nothing at the server. */
    public ReleaseFanOut() {
        this(LOCAL);
    }

    public ReleaseFanOut(Server server) {
        this.server = Objects.requireNonNull(server, "server is missing (null)");
    }

    /**
     * Adds a listener of {@code key}'s notices; opens the key at the server first if it is the
     * key's first listener. Once the returned subscription is closed (twice does nothing), the
     * listener is given no further notice.
     */
    public ReleaseSubscription subscribe(String key, Consumer<ReleaseNotice> listener) {
        Objects.requireNonNull(key, "key is missing (null)");
        Objects.requireNonNull(listener, "listener is missing (null)");
        while (true) {
            Topic topic = topics.computeIfAbsent(key, k -> new Topic());
            topic.lock.lock();
            try {
                if (topic.retired) {
                    continue; // its last listener just left: a new topic takes its place
                }
                if (!topic.open) {
                    try {
                        server.open(key);
                    } catch (RuntimeException | Error e) {
                        if (topic.listeners.isEmpty()) {
                            retire(key, topic);
                        }
                        throw e;
                    }
                    topic.open = true;
                }
                Listener added = new Listener(key, listener, topic);
                topic.listeners.add(added);
                return added;
            } finally {
                topic.lock.unlock();
            }
        }
    }

    /** Hands {@code notice} to the listeners of {@code key}, on the calling thread. */
    public void publish(String key, ReleaseNotice notice) {
        Topic topic = topics.get(key);
        if (topic != null) {
            topic.listeners.forEach(listener -> listener.fire(notice));
        }
    }

    /** {@link #publish(String, ReleaseNotice)} to the listeners of the notice's own key. */
    public void publish(ReleaseNotice notice) {
        publish(notice.key(), notice);
    }

    /** Whether {@code key} has a listener. */
    public boolean hasListeners(String key) {
        Topic topic = topics.get(key);
        return topic != null && !topic.listeners.isEmpty();
    }

    /** The keys that have listeners now (a live view). */
    public Set<String> keys() {
        return topics.keySet();
    }

    /** Whether no key has a listener. */
    public boolean isEmpty() {
        return topics.isEmpty();
    }

    /** Closes every subscription, closing each key at the server. */
    public void closeAll() {
        for (Topic topic : List.copyOf(topics.values())) {
            topic.listeners.forEach(Listener::close);
        }
    }

    /** Call with the topic's lock held. */
    private void retire(String key, Topic topic) {
        topic.retired = true;
        topics.remove(key, topic);
    }

    private final class Topic {
        final ReentrantLock lock = new ReentrantLock();
        final CopyOnWriteArrayList<Listener> listeners = new CopyOnWriteArrayList<>();
        boolean open; // guarded by lock
        boolean retired; // guarded by lock; a retired topic is out of the map and never reused
    }

    private final class Listener implements ReleaseSubscription {
        private final String key;
        private final Consumer<ReleaseNotice> consumer;
        private final Topic topic;
        private volatile boolean closed;

        Listener(String key, Consumer<ReleaseNotice> consumer, Topic topic) {
            this.key = key;
            this.consumer = consumer;
            this.topic = topic;
        }

        void fire(ReleaseNotice notice) {
            if (closed) {
                return; // closed while a notice was on its way
            }
            try {
                consumer.accept(notice);
            } catch (RuntimeException e) {
                log.warn("a release listener of {} failed", key, e);
            }
        }

        @Override
        public void close() {
            closed = true;
            Topic current = topic;
            current.lock.lock();
            try {
                if (!current.listeners.remove(this) || !current.listeners.isEmpty()) {
                    return;
                }
                try {
                    // Closed at the server before the topic leaves the map: a later open follows it.
                    server.close(key);
                } catch (RuntimeException e) {
                    log.warn("closing the server subscription of {} failed", key, e);
                } finally {
                    retire(key, current);
                }
            } finally {
                current.lock.unlock();
            }
        }
    }
}
