package dev.leasehold.etcd;

import dev.leasehold.LeaseStoreException;
import dev.leasehold.LockKey;
import dev.leasehold.spi.ReleaseFanOut;
import dev.leasehold.spi.ReleaseNotice;
import dev.leasehold.spi.ReleaseSubscription;
import io.etcd.jetcd.ByteSequence;
import io.etcd.jetcd.KeyValue;
import io.etcd.jetcd.Watch;
import io.etcd.jetcd.common.exception.CompactedException;
import io.etcd.jetcd.options.WatchOption;
import io.etcd.jetcd.watch.WatchEvent;
import io.etcd.jetcd.watch.WatchResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.Consumer;
import java.util.function.Function;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The release notices of one {@link EtcdLeaseStore}: etcd watches that outlive the member they run
 * on, one per key however many subscribers in this JVM wait on it (through a {@link
 * ReleaseFanOut}). A key's watch sees a deletion of its lease (release, force-release or expiry)
 * with the fence of the ended grant, forced when the key's force marker was put in the same
 * revision; the store-wide watch sees every force marker. Thread-safe; callbacks run on jetcd's
 * threads.
 */
final class EtcdWatches implements ReleaseFanOut.Server {

    private static final Logger log = LoggerFactory.getLogger(EtcdWatches.class);

    /** The topic of the store-wide force-release watch; no rendered key looks like it (no colon). */
    private static final String FORCE_RELEASES = "(force-releases)";

    private final Watch watch;
    private final EtcdKeys keys;
    private final Duration timeout;
    private final ReleaseFanOut fanOut = new ReleaseFanOut(this);
    private final Map<String, KeyWatch> watches = new ConcurrentHashMap<>();
    private final AtomicBoolean closed = new AtomicBoolean();

    EtcdWatches(Watch watch, EtcdKeys keys, Duration timeout) {
        this.watch = watch;
        this.keys = keys;
        this.timeout = timeout;
    }

    /**
     * Watches the lock's keys from now on; returns once etcd confirmed the watch.
     *
     * @throws LeaseStoreException naming the key if etcd does not confirm it within the timeout
     * @throws IllegalStateException if the store is closed
     */
    ReleaseSubscription subscribe(LockKey key, Consumer<ReleaseNotice> onRelease) {
        return subscribe(key.render(), onRelease);
    }

    /** Every force-release of the store's keys, from the store-wide markers; as {@link #subscribe}. */
    ReleaseSubscription subscribeForceReleases(Consumer<ReleaseNotice> onForceRelease) {
        return subscribe(FORCE_RELEASES, onForceRelease);
    }

    /** Closes every watch; later subscriptions are refused. */
    void close() {
        if (closed.compareAndSet(false, true)) {
            fanOut.closeAll();
        }
    }

    private ReleaseSubscription subscribe(String topic, Consumer<ReleaseNotice> onRelease) {
        if (closed.get()) {
            throw new IllegalStateException("the etcd lease store is closed");
        }
        return fanOut.subscribe(topic, onRelease);
    }

    /** A topic's first subscriber: opens its watch and returns once etcd confirmed it. */
    @Override
    public void open(String topic) {
        KeyWatch opened = topic.equals(FORCE_RELEASES) ? forceReleaseWatch() : keyWatch(LockKey.parse(topic));
        watches.put(topic, opened);
        try {
            opened.open();
            // Returns once etcd confirmed the watch: a release after this is delivered.
            opened.created.get(timeout.toMillis(), TimeUnit.MILLISECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            close(topic);
            throw new LeaseStoreException("subscribe to releases", topic, e);
        } catch (ExecutionException | TimeoutException e) {
            close(topic);
            throw new LeaseStoreException(
                    "subscribe to releases", topic, e instanceof ExecutionException ? e.getCause() : e);
        } catch (RuntimeException e) {
            close(topic);
            throw e;
        }
    }

    /** A topic's last subscriber left. */
    @Override
    public void close(String topic) {
        KeyWatch ended = watches.remove(topic);
        if (ended != null) {
            ended.close();
        }
    }

    private KeyWatch keyWatch(LockKey key) {
        ByteSequence leaseKey = keys.lease(key);
        ByteSequence markerKey = keys.keyMarker(key);
        String rendered = key.render();
        Function<Long, WatchOption> options = revision -> WatchOption.builder()
                .isPrefix(true)
                .withPrevKV(true)
                .withCreateNotify(true)
                .withRequireLeader(true)
                .withRevision(revision)
                .build();
        return new KeyWatch(
                rendered,
                leaseKey,
                options,
                response -> keyNotices(rendered, leaseKey, markerKey, response),
                new ReleaseNotice(rendered, 0, false));
    }

    private KeyWatch forceReleaseWatch() {
        Function<Long, WatchOption> options = revision -> WatchOption.builder()
                .isPrefix(true)
                .withNoDelete(true)
                .withCreateNotify(true)
                .withRequireLeader(true)
                .withRevision(revision)
                .build();
        return new KeyWatch(FORCE_RELEASES, keys.storeMarkerPrefix(), options, this::forceNotices, null);
    }

    private static List<ReleaseNotice> keyNotices(
            String rendered, ByteSequence leaseKey, ByteSequence markerKey, WatchResponse response) {
        // Events of one transaction share a revision and arrive in one response.
        Map<Long, long[]> byRevision = new LinkedHashMap<>(); // {released, fence, forced, marker fence}
        for (WatchEvent event : response.getEvents()) {
            KeyValue changed = event.getKeyValue();
            long[] group = byRevision.computeIfAbsent(changed.getModRevision(), r -> new long[4]);
            if (event.getEventType() == WatchEvent.EventType.DELETE
                    && changed.getKey().equals(leaseKey)) {
                group[0] = 1;
                KeyValue previous = event.getPrevKV();
                group[1] = previous == null ? 0 : previous.getCreateRevision();
            } else if (event.getEventType() == WatchEvent.EventType.PUT
                    && changed.getKey().equals(markerKey)) {
                group[2] = 1;
                group[3] = parseFence(changed.getValue());
            }
        }
        List<ReleaseNotice> notices = new ArrayList<>();
        for (long[] group : byRevision.values()) {
            if (group[0] == 1) {
                notices.add(new ReleaseNotice(rendered, group[1], group[2] == 1));
            } else if (group[2] == 1) {
                notices.add(new ReleaseNotice(rendered, group[3], true));
            }
        }
        return notices;
    }

    private List<ReleaseNotice> forceNotices(WatchResponse response) {
        List<ReleaseNotice> notices = new ArrayList<>();
        for (WatchEvent event : response.getEvents()) {
            if (event.getEventType() == WatchEvent.EventType.PUT) {
                KeyValue marker = event.getKeyValue();
                notices.add(new ReleaseNotice(
                        keys.renderedOfStoreMarker(marker.getKey()), parseFence(marker.getValue()), true));
            }
        }
        return notices;
    }

    private static long parseFence(ByteSequence value) {
        try {
            return Math.max(0, Long.parseLong(value.toString(StandardCharsets.UTF_8)));
        } catch (NumberFormatException e) {
            return 0;
        }
    }

    private static void closeQuietly(Watch.Watcher watcher) {
        try {
            watcher.close();
        } catch (RuntimeException e) {
            log.debug("closing an etcd watch failed", e);
        }
    }

    /**
     * One watch that outlives the etcd member it runs on: when the stream ends (the member died or
     * lost its leader), it is opened again on the client's next member from the revision after the
     * last one seen, so no release in between is missed. If etcd compacted that revision away, the
     * watch starts from now and {@code onGap} (a notice with fence 0, when there is one) wakes the
     * waiters, who then try the key themselves.
     */
    private final class KeyWatch {
        final String what;
        final ByteSequence from;
        final Function<Long, WatchOption> options;
        final Function<WatchResponse, List<ReleaseNotice>> decoder;
        final ReleaseNotice onGap;
        final CompletableFuture<Void> created = new CompletableFuture<>();
        final AtomicBoolean ended = new AtomicBoolean();
        private long revision; // guarded by this: the last revision delivered
        private int failures; // guarded by this
        private Watch.Watcher watcher; // guarded by this

        KeyWatch(
                String what,
                ByteSequence from,
                Function<Long, WatchOption> options,
                Function<WatchResponse, List<ReleaseNotice>> decoder,
                ReleaseNotice onGap) {
            this.what = what;
            this.from = from;
            this.options = options;
            this.decoder = decoder;
            this.onGap = onGap;
        }

        synchronized void open() {
            if (ended.get()) {
                return;
            }
            if (watcher != null) {
                closeQuietly(watcher);
            }
            watcher = watch.watch(
                    from, options.apply(revision == 0 ? 0 : revision + 1), Watch.listener(this::onNext, this::onError));
        }

        private void onNext(WatchResponse response) {
            synchronized (this) {
                failures = 0;
                List<WatchEvent> events = response.getEvents();
                if (!events.isEmpty()) {
                    revision = Math.max(
                            revision,
                            events.get(events.size() - 1).getKeyValue().getModRevision());
                } else {
                    revision = Math.max(revision, response.getHeader().getRevision());
                }
            }
            if (response.isCreatedNotify()) {
                created.complete(null);
            }
            decoder.apply(response).forEach(this::fire);
        }

        private void onError(Throwable error) {
            if (ended.get() || created.completeExceptionally(error)) {
                return; // closed, or the first open failed and subscribe() reports it
            }
            long delay;
            synchronized (this) {
                if (error instanceof CompactedException) {
                    revision = 0;
                    if (onGap != null) {
                        fire(onGap);
                    } else {
                        log.warn("the etcd watch of {} missed compacted revisions", what);
                    }
                }
                delay = Math.min(2000, 50L << Math.min(failures, 6));
                failures++;
            }
            log.debug("the etcd watch of {} ended ({}); reopening in {} ms", what, error.toString(), delay);
            CompletableFuture.runAsync(this::reopen, CompletableFuture.delayedExecutor(delay, TimeUnit.MILLISECONDS));
        }

        private void reopen() {
            try {
                open();
            } catch (RuntimeException e) {
                onError(e);
            }
        }

        private void fire(ReleaseNotice notice) {
            fanOut.publish(what, notice);
        }

        void close() {
            if (ended.compareAndSet(false, true)) {
                synchronized (this) {
                    if (watcher != null) {
                        closeQuietly(watcher);
                        watcher = null;
                    }
                }
            }
        }
    }
}
