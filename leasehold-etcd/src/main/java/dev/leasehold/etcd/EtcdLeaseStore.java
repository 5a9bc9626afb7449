package dev.leasehold.etcd;

import static dev.leasehold.etcd.EtcdKeys.bytes;

import dev.leasehold.LeaseInfo;
import dev.leasehold.LeaseStoreException;
import dev.leasehold.LockKey;
import dev.leasehold.spi.AcquireResult;
import dev.leasehold.spi.Grant;
import dev.leasehold.spi.LeaseStore;
import dev.leasehold.spi.OwnerTokens;
import dev.leasehold.spi.ReleaseNotice;
import dev.leasehold.spi.ReleaseSubscription;
import io.etcd.jetcd.ByteSequence;
import io.etcd.jetcd.Client;
import io.etcd.jetcd.KV;
import io.etcd.jetcd.KeyValue;
import io.etcd.jetcd.Lease;
import io.etcd.jetcd.Watch;
import io.etcd.jetcd.common.exception.CompactedException;
import io.etcd.jetcd.kv.GetResponse;
import io.etcd.jetcd.kv.TxnResponse;
import io.etcd.jetcd.lease.LeaseGrantResponse;
import io.etcd.jetcd.lease.NoSuchLeaseException;
import io.etcd.jetcd.op.Cmp;
import io.etcd.jetcd.op.CmpTarget;
import io.etcd.jetcd.op.Op;
import io.etcd.jetcd.options.DeleteOption;
import io.etcd.jetcd.options.GetOption;
import io.etcd.jetcd.options.LeaseOption;
import io.etcd.jetcd.options.PutOption;
import io.etcd.jetcd.options.WatchOption;
import io.etcd.jetcd.watch.WatchEvent;
import io.etcd.jetcd.watch.WatchResponse;
import java.nio.charset.StandardCharsets;
import java.time.Clock;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Consumer;
import java.util.function.Function;
import java.util.regex.Pattern;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A {@link LeaseStore} on etcd through jetcd: the consensus-backed store, whose grants, fences and
 * expiry do not depend on any client's timing (B8).
 *
 * <p>Each lock is one etcd key whose value is the owner token, bound to an etcd lease of its own
 * (see {@link EtcdKeys} for the layout). The operations, each one transaction where a condition
 * must hold:
 *
 * <ul>
 *   <li><b>acquire</b>: grant an etcd lease of the asked length, then one transaction: IF the key
 *       does not exist THEN put it with the lease; ELSE IF its value is our owner THEN put it again
 *       bound to the new lease (re-entry; the key keeps its create revision); ELSE read it (busy). An
 *       unused or replaced etcd lease is revoked afterwards. When the transaction gives no answer
 *       (a timeout, an interrupt, a lost connection), the new lease may already hold the key, so it
 *       is not revoked blindly: a second transaction stops the first from applying later and reads
 *       the key; if the key is on the new lease the call is a grant after all, else the new lease
 *       is revoked and the failure thrown. If that goes unanswered too, the new lease is kept (it
 *       expires at its TTL) and the failure thrown: the owner's key is never deleted by its own
 *       unanswered call ({@code EtcdUnansweredTransactionTest}).
 *   <li><b>fence</b>: the key's create revision. etcd's revision is one counter for the whole
 *       cluster, agreed by Raft and stored on disk, that only grows, so every new grant of a key
 *       gets a larger fence than any grant before it, across expiry, force-release, restarts and
 *       leader changes.
 *   <li><b>renew</b>: keep-alive-once of the key's etcd lease, then a read confirming the key is
 *       still ours on that lease; when the asked length differs from the lease's, the key is bound
 *       to a new lease of the new length in an owner-checked transaction, settled like acquire's
 *       when it gives no answer.
 *   <li><b>release</b>: IF the value is our owner THEN delete the key, in one transaction.
 *   <li><b>force-release</b>: IF the key's create revision is the one just read THEN delete it and
 *       put the force markers, in one transaction, so watchers see the deletion and the mark
 *       together.
 *   <li><b>expiry</b>: etcd's own lease TTL on the leader's clock (B5); a new leader only ever
 *       extends leases. etcd counts leases in whole seconds and has a shortest lease (1.5 election
 *       timeouts, rounded up: 2 s with etcd's defaults), so a lease is rounded up to that; the grant
 *       reports the length etcd applied, and the engine uses it.
 *   <li><b>wake-ups</b>: a watch on the lock's keys with previous values, so a release,
 *       force-release or expiry is seen with the fence of the grant that ended.
 * </ul>
 *
 * <p>etcd reports remaining times, not instants: {@code expiresAt} is this JVM's clock plus the
 * remaining time, for display only. Thread-safe. Every etcd call waits at most the builder's
 * timeout (a transaction without an answer is followed by one more, to learn its outcome); a
 * failure or timeout is a {@link LeaseStoreException} naming the key.
 */
public final class EtcdLeaseStore implements LeaseStore {

    private static final Logger log = LoggerFactory.getLogger(EtcdLeaseStore.class);
    private static final Pattern PREFIX = Pattern.compile("[A-Za-z0-9_.:/\\-]{1,64}");

    /** How long force markers stay; watchers see them at once, nothing reads them later. */
    private static final long MARKER_TTL_SECONDS = 10;

    private static final int ATTEMPTS = 5;

    private final KV kv;
    private final Lease leases;
    private final Watch watch;
    private final EtcdKeys keys;
    private final Duration timeout;
    private final Clock clock;

    /** etcd's shortest lease, in seconds, as learned from the grants it answered. */
    private final AtomicLong shortestTtl = new AtomicLong(1);

    /** The etcd lease of each grant this store made or renewed, so renewals need no lookup. */
    private final ConcurrentHashMap<String, Bound> bound = new ConcurrentHashMap<>();

    private final Set<Subscription> subscriptions = ConcurrentHashMap.newKeySet();
    private final AtomicBoolean closed = new AtomicBoolean();

    private record Bound(String owner, long leaseId) {}

    private EtcdLeaseStore(Builder builder) {
        this.kv = builder.client.getKVClient();
        this.leases = builder.client.getLeaseClient();
        this.watch = builder.client.getWatchClient();
        this.keys = new EtcdKeys(builder.keyPrefix);
        this.timeout = builder.timeout;
        this.clock = builder.clock;
    }

    /** A builder for a store on the cluster {@code client} talks to; the client stays the caller's. */
    public static Builder builder(Client client) {
        return new Builder(Objects.requireNonNull(client, "client is missing (null)"));
    }

    // ---------------------------------------------------------------- acquire, renew, release

    @Override
    public AcquireResult tryAcquire(LockKey key, String owner, Duration leaseFor) {
        checkOwner(key, owner);
        long ttl = ttlSeconds(leaseFor);
        ByteSequence leaseKey = keys.lease(key);
        ByteSequence value = bytes(owner);
        LeaseGrantResponse lease = grantLease("acquire", key, ttl);
        Cmp unsettled = unsettled(lease.getID());
        boolean used = false;
        try {
            PutOption bind = PutOption.builder().withLeaseId(lease.getID()).build();
            PutOption rebind =
                    PutOption.builder().withLeaseId(lease.getID()).withPrevKV().build();
            TxnResponse txn;
            try {
                txn = call(
                        "acquire",
                        key,
                        kv.txn()
                                // IF the key does not exist THEN grant it on the new lease
                                .If(new Cmp(leaseKey, Cmp.Op.EQUAL, CmpTarget.createRevision(0)), unsettled)
                                .Then(Op.put(leaseKey, value, bind))
                                .Else(Op.txn(
                                        // ELSE IF it is ours THEN bind it to the new lease (the fence stays)
                                        new Cmp[] {new Cmp(leaseKey, Cmp.Op.EQUAL, CmpTarget.value(value)), unsettled},
                                        new Op[] {Op.put(leaseKey, value, rebind)},
                                        // ELSE read the holder (busy)
                                        new Op[] {Op.get(leaseKey, GetOption.DEFAULT)}))
                                .commit());
            } catch (LeaseStoreException unanswered) {
                used = true; // settle() decides whether the new lease is revoked
                KeyValue applied = settle("acquire", key, owner, lease.getID(), unanswered);
                bound.put(key.render(), new Bound(owner, lease.getID()));
                return new AcquireResult.Granted(grant(applied.getCreateRevision(), lease.getTTL()));
            }
            if (txn.isSucceeded()) {
                used = true;
                bound.put(key.render(), new Bound(owner, lease.getID()));
                // The put is the transaction's only write: the key's create revision is its revision.
                return new AcquireResult.Granted(grant(txn.getHeader().getRevision(), lease.getTTL()));
            }
            TxnResponse nested = txn.getTxnResponses().get(0);
            if (nested.isSucceeded()) {
                used = true;
                KeyValue previous = nested.getPutResponses().get(0).getPrevKv();
                bound.put(key.render(), new Bound(owner, lease.getID()));
                if (previous.getLease() != lease.getID()) {
                    revokeLater(previous.getLease());
                }
                return new AcquireResult.Granted(grant(previous.getCreateRevision(), lease.getTTL()));
            }
            List<KeyValue> holder = nested.getGetResponses().get(0).getKvs();
            return new AcquireResult.Busy(
                    holder.isEmpty()
                            ? Duration.ZERO
                            : holderRemaining(key, holder.get(0).getLease()));
        } finally {
            // Only after an answer: settle() decides for a transaction that gave none.
            if (!used) {
                revokeLater(lease.getID());
            }
        }
    }

    @Override
    public Optional<Grant> renew(LockKey key, String owner, Duration leaseFor) {
        checkOwner(key, owner);
        long ttl = ttlSeconds(leaseFor);
        String rendered = key.render();
        Bound known = bound.get(rendered);
        long leaseId;
        if (known != null && known.owner().equals(owner)) {
            leaseId = known.leaseId();
        } else {
            KeyValue current = read("renew", key);
            if (!ownedBy(current, owner)) {
                forget(rendered, owner);
                return Optional.empty();
            }
            leaseId = current.getLease();
        }
        for (int attempt = 0; attempt < ATTEMPTS; attempt++) {
            long granted = keepAlive(key, leaseId);
            // Read after the keep-alive: if the key is still ours on that lease now, the lease was
            // extended while it held the key, so the grant below is never longer than the truth.
            KeyValue current = read("renew", key);
            if (!ownedBy(current, owner)) {
                forget(rendered, owner);
                return Optional.empty();
            }
            if (current.getLease() != leaseId) {
                // The same owner re-acquired the key elsewhere and bound it to a newer lease.
                leaseId = current.getLease();
                continue;
            }
            if (granted <= 0) {
                forget(rendered, owner);
                return Optional.empty();
            }
            if (granted != ttl) {
                return rebind(key, owner, ttl, leaseId);
            }
            bound.put(rendered, new Bound(owner, leaseId));
            return Optional.of(grant(current.getCreateRevision(), granted));
        }
        return Optional.empty();
    }

    /**
     * Binds the owner's key, now on {@code oldLease}, to a new lease of another length, if the
     * owner still holds it.
     */
    private Optional<Grant> rebind(LockKey key, String owner, long ttl, long oldLease) {
        ByteSequence leaseKey = keys.lease(key);
        ByteSequence value = bytes(owner);
        LeaseGrantResponse lease = grantLease("renew", key, ttl);
        boolean used = false;
        try {
            TxnResponse txn;
            try {
                txn = call(
                        "renew",
                        key,
                        kv.txn()
                                // IF the key is ours THEN bind it to the new lease (the fence stays)
                                .If(new Cmp(leaseKey, Cmp.Op.EQUAL, CmpTarget.value(value)), unsettled(lease.getID()))
                                .Then(Op.put(
                                        leaseKey,
                                        value,
                                        PutOption.builder()
                                                .withLeaseId(lease.getID())
                                                .withPrevKV()
                                                .build()))
                                .commit());
            } catch (LeaseStoreException unanswered) {
                used = true; // settle() decides whether the new lease is revoked
                KeyValue applied = settle("renew", key, owner, lease.getID(), unanswered);
                bound.put(key.render(), new Bound(owner, lease.getID()));
                revokeLater(oldLease);
                return Optional.of(grant(applied.getCreateRevision(), lease.getTTL()));
            }
            if (!txn.isSucceeded()) {
                forget(key.render(), owner);
                return Optional.empty();
            }
            used = true;
            KeyValue previous = txn.getPutResponses().get(0).getPrevKv();
            bound.put(key.render(), new Bound(owner, lease.getID()));
            revokeLater(previous.getLease());
            return Optional.of(grant(previous.getCreateRevision(), lease.getTTL()));
        } finally {
            // Only after an answer: settle() decides for a transaction that gave none.
            if (!used) {
                revokeLater(lease.getID());
            }
        }
    }

    /**
     * The condition every transaction binding a key to {@code leaseId} carries: the lease's
     * settle marker does not exist. Once {@link #settle} has put it, that transaction can no
     * longer apply, however late it reaches etcd.
     */
    private Cmp unsettled(long leaseId) {
        return new Cmp(keys.settleMarker(leaseId), Cmp.Op.EQUAL, CmpTarget.createRevision(0));
    }

    /**
     * Learns the outcome of a transaction binding {@code key} to the new etcd lease {@code leaseId}
     * that failed without an answer (a timeout, an interrupt, a lost connection): it may have been
     * applied, and then the key is bound to that lease, so revoking it blindly would delete the
     * owner's live key. One transaction puts the lease's settle marker, so the pending transaction
     * can no longer apply, and reads the key in the same revision.
     *
     * @return the key, if the pending transaction was applied: the new lease is the key's now
     * @throws LeaseStoreException {@code failure}, if it was not applied (the new lease is
     *     revoked; the key is as it was), or if etcd did not answer this either (the new lease is
     *     kept, as the key may be bound to it, and expires at its TTL)
     */
    private KeyValue settle(String operation, LockKey key, String owner, long leaseId, LeaseStoreException failure) {
        // An interrupt ends the wait for the answer, not the duty to learn the outcome.
        boolean interrupted = Thread.interrupted();
        ByteSequence marker = keys.settleMarker(leaseId);
        try {
            TxnResponse txn = call(
                    operation,
                    key,
                    kv.txn()
                            .Then(
                                    // The marker lives on the new lease, so it goes when the lease does.
                                    Op.put(
                                            marker,
                                            bytes(owner),
                                            PutOption.builder()
                                                    .withLeaseId(leaseId)
                                                    .build()),
                                    Op.get(keys.lease(key), GetOption.DEFAULT))
                            .commit());
            List<KeyValue> found = txn.getGetResponses().get(0).getKvs();
            KeyValue current = found.isEmpty() ? null : found.get(0);
            if (ownedBy(current, owner) && current.getLease() == leaseId) {
                kv.delete(marker); // not awaited: it goes with the lease anyway
                log.debug("{} of {}: etcd applied the transaction whose answer was lost", operation, key);
                return current;
            }
            revokeLater(leaseId);
        } catch (LeaseStoreException unknown) {
            failure.addSuppressed(unknown);
            // The key may be bound to the new lease: keep it; the next renewal reads which lease it is.
            forget(key.render(), owner);
            log.warn(
                    "{} of {}: the outcome is unknown; etcd lease {} is kept and expires at its TTL",
                    operation,
                    key,
                    leaseId);
        } finally {
            if (interrupted) {
                Thread.currentThread().interrupt();
            }
        }
        throw failure;
    }

    @Override
    public boolean release(LockKey key, String owner) {
        checkOwner(key, owner);
        ByteSequence leaseKey = keys.lease(key);
        TxnResponse txn = call(
                "release",
                key,
                kv.txn()
                        // IF the key is ours THEN delete it
                        .If(new Cmp(leaseKey, Cmp.Op.EQUAL, CmpTarget.value(bytes(owner))))
                        .Then(Op.delete(
                                leaseKey,
                                DeleteOption.builder().withPrevKV(true).build()))
                        .commit());
        forget(key.render(), owner);
        if (!txn.isSucceeded()) {
            return false;
        }
        txn.getDeleteResponses().get(0).getPrevKvs().forEach(previous -> revokeLater(previous.getLease()));
        return true;
    }

    // ---------------------------------------------------------------- operators

    @Override
    public Optional<LeaseInfo> inspect(LockKey key) {
        Objects.requireNonNull(key, "key is missing (null)");
        KeyValue current = read("inspect", key);
        return current == null ? Optional.empty() : info(key, current);
    }

    private Optional<LeaseInfo> info(LockKey key, KeyValue current) {
        long ttl = timeToLive("inspect", key, current.getLease());
        if (ttl < 0) {
            return Optional.empty(); // expired; etcd deletes the key in a moment
        }
        Duration remaining = Duration.ofSeconds(ttl);
        return Optional.of(new LeaseInfo(
                key,
                current.getValue().toString(StandardCharsets.UTF_8),
                current.getCreateRevision(),
                remaining,
                clock.instant().plus(remaining)));
    }

    /** Reads the namespace's range page by page, then each lease's remaining time. */
    @Override
    public List<LeaseInfo> list(String namespace, int limit) {
        Objects.requireNonNull(namespace, "namespace is missing (null)");
        if (limit < 1 || limit > 10_000) {
            throw new IllegalArgumentException("limit must be between 1 and 10000, was " + limit);
        }
        ByteSequence from = keys.namespace(namespace);
        ByteSequence end = prefixEnd(from);
        Map<LockKey, KeyValue> found = new java.util.TreeMap<>();
        while (found.size() < limit) {
            GetOption page = GetOption.builder().withRange(end).withLimit(500).build();
            GetResponse response = call("list", namespace + ":*", kv.get(from, page));
            for (KeyValue entry : response.getKvs()) {
                String rendered = keys.renderedOfLease(entry.getKey());
                if (rendered != null && found.size() < limit) {
                    found.put(LockKey.parse(rendered), entry);
                }
            }
            if (!response.isMore() || response.getKvs().isEmpty()) {
                break;
            }
            List<KeyValue> kvs = response.getKvs();
            from = kvs.get(kvs.size() - 1).getKey().concat(ByteSequence.from(new byte[] {0}));
        }
        List<LeaseInfo> leasesFound = new ArrayList<>();
        found.forEach((key, entry) -> info(key, entry).ifPresent(leasesFound::add));
        return leasesFound;
    }

    @Override
    public boolean forceRelease(LockKey key) {
        Objects.requireNonNull(key, "key is missing (null)");
        ByteSequence leaseKey = keys.lease(key);
        LeaseGrantResponse markerLease = grantLease("force-release", key, MARKER_TTL_SECONDS);
        PutOption marker = PutOption.builder().withLeaseId(markerLease.getID()).build();
        for (int attempt = 0; attempt < ATTEMPTS; attempt++) {
            KeyValue current = read("force-release", key);
            long fence = current == null ? 0 : current.getCreateRevision();
            ByteSequence fenceText = bytes(Long.toString(fence));
            List<Op> then = new ArrayList<>();
            if (current != null) {
                then.add(Op.delete(leaseKey, DeleteOption.DEFAULT));
            }
            then.add(Op.put(keys.keyMarker(key), fenceText, marker));
            then.add(Op.put(keys.storeMarker(key), fenceText, marker));
            TxnResponse txn = call(
                    "force-release",
                    key,
                    kv.txn()
                            // IF the key is still the grant just read (or still absent) THEN delete
                            // it and mark the deletion as forced, in the same revision
                            .If(new Cmp(leaseKey, Cmp.Op.EQUAL, CmpTarget.createRevision(fence)))
                            .Then(then.toArray(Op[]::new))
                            .commit());
            if (txn.isSucceeded()) {
                bound.remove(key.render());
                if (current != null) {
                    revokeLater(current.getLease());
                }
                return current != null;
            }
        }
        throw new LeaseStoreException(
                "force-release",
                key.render(),
                new IllegalStateException("the key changed hands " + ATTEMPTS + " times while being force-released"));
    }

    // ---------------------------------------------------------------- notifications

    @Override
    public boolean supportsReleaseNotifications() {
        return true;
    }

    /**
     * Watches the lock's keys from now on: a deletion of the lease (release, force-release or
     * expiry) is a notice with the fence of the ended grant, forced when the force marker was put
     * in the same revision; a marker alone is a force-release of a free key.
     */
    @Override
    public ReleaseSubscription subscribe(LockKey key, Consumer<ReleaseNotice> onRelease) {
        Objects.requireNonNull(key, "key is missing (null)");
        Objects.requireNonNull(onRelease, "onRelease is missing (null)");
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
        return watch(
                rendered,
                leaseKey,
                options,
                response -> keyNotices(rendered, leaseKey, markerKey, response),
                onRelease,
                new ReleaseNotice(rendered, 0, false));
    }

    @Override
    public ReleaseSubscription subscribeForceReleases(Consumer<ReleaseNotice> onForceRelease) {
        Objects.requireNonNull(onForceRelease, "onForceRelease is missing (null)");
        Function<Long, WatchOption> options = revision -> WatchOption.builder()
                .isPrefix(true)
                .withNoDelete(true)
                .withCreateNotify(true)
                .withRequireLeader(true)
                .withRevision(revision)
                .build();
        return watch("(force-releases)", keys.storeMarkerPrefix(), options, this::forceNotices, onForceRelease, null);
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

    private ReleaseSubscription watch(
            String what,
            ByteSequence from,
            Function<Long, WatchOption> options,
            Function<WatchResponse, List<ReleaseNotice>> decoder,
            Consumer<ReleaseNotice> onRelease,
            ReleaseNotice onGap) {
        if (closed.get()) {
            throw new IllegalStateException("the etcd lease store is closed");
        }
        Subscription subscription = new Subscription(what, from, options, decoder, onRelease, onGap);
        subscriptions.add(subscription);
        subscription.open();
        try {
            // Returns once etcd confirmed the watch: a release after this is delivered.
            subscription.created.get(timeout.toMillis(), TimeUnit.MILLISECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            subscription.close();
            throw new LeaseStoreException("subscribe to releases", what, e);
        } catch (ExecutionException | TimeoutException e) {
            subscription.close();
            throw new LeaseStoreException(
                    "subscribe to releases", what, e instanceof ExecutionException ? e.getCause() : e);
        }
        return subscription;
    }

    /**
     * One watch that outlives the etcd member it runs on: when the stream ends (the member died or
     * lost its leader), it is opened again on the client's next member from the revision after the
     * last one seen, so no release in between is missed. If etcd compacted that revision away, the
     * watch starts from now and {@code onGap} (a notice with fence 0, when there is one) wakes the
     * waiters, who then try the key themselves.
     */
    private final class Subscription implements ReleaseSubscription {
        final String what;
        final ByteSequence from;
        final Function<Long, WatchOption> options;
        final Function<WatchResponse, List<ReleaseNotice>> decoder;
        final Consumer<ReleaseNotice> onRelease;
        final ReleaseNotice onGap;
        final CompletableFuture<Void> created = new CompletableFuture<>();
        final AtomicBoolean ended = new AtomicBoolean();
        private long revision; // guarded by this: the last revision delivered
        private int failures; // guarded by this
        private Watch.Watcher watcher; // guarded by this

        Subscription(
                String what,
                ByteSequence from,
                Function<Long, WatchOption> options,
                Function<WatchResponse, List<ReleaseNotice>> decoder,
                Consumer<ReleaseNotice> onRelease,
                ReleaseNotice onGap) {
            this.what = what;
            this.from = from;
            this.options = options;
            this.decoder = decoder;
            this.onRelease = onRelease;
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
            try {
                onRelease.accept(notice);
            } catch (RuntimeException e) {
                log.warn("a release callback for {} failed", what, e);
            }
        }

        @Override
        public void close() {
            if (ended.compareAndSet(false, true)) {
                subscriptions.remove(this);
                synchronized (this) {
                    if (watcher != null) {
                        closeQuietly(watcher);
                        watcher = null;
                    }
                }
            }
        }
    }

    private static void closeQuietly(Watch.Watcher watcher) {
        try {
            watcher.close();
        } catch (RuntimeException e) {
            log.debug("closing an etcd watch failed", e);
        }
    }

    @Override
    public String name() {
        return "etcd";
    }

    /** Closes this store's watches; the client stays open. */
    @Override
    public void close() {
        if (closed.compareAndSet(false, true)) {
            List.copyOf(subscriptions).forEach(Subscription::close);
            bound.clear();
        }
    }

    // ---------------------------------------------------------------- etcd calls

    private LeaseGrantResponse grantLease(String operation, LockKey key, long ttl) {
        LeaseGrantResponse lease = call(operation, key, leases.grant(ttl));
        // etcd raises a lease shorter than its minimum to that minimum; remember it, so that a
        // renewal asking for the same length does not mistake it for a change of length.
        if (lease.getTTL() > ttl) {
            shortestTtl.accumulateAndGet(lease.getTTL(), Math::max);
        }
        return lease;
    }

    /** The TTL the lease was refreshed to, or 0 if etcd no longer has it. */
    private long keepAlive(LockKey key, long leaseId) {
        try {
            return call("renew", key, leases.keepAliveOnce(leaseId)).getTTL();
        } catch (LeaseStoreException e) {
            if (e.getCause() instanceof NoSuchLeaseException) {
                return 0;
            }
            throw e;
        }
    }

    /** Remaining whole seconds of a lease, or -1 if it is gone. */
    private long timeToLive(String operation, LockKey key, long leaseId) {
        if (leaseId == 0) {
            return Duration.ofDays(1).toSeconds(); // a key put by hand without a lease never expires
        }
        return call(operation, key, leases.timeToLive(leaseId, LeaseOption.DEFAULT))
                .getTTL();
    }

    /** etcd reports whole seconds, rounded down: the holder's lease ends before one more second. */
    private Duration holderRemaining(LockKey key, long leaseId) {
        long ttl = timeToLive("acquire", key, leaseId);
        return ttl < 0 ? Duration.ZERO : Duration.ofSeconds(ttl + 1);
    }

    private KeyValue read(String operation, LockKey key) {
        List<KeyValue> found = call(operation, key, kv.get(keys.lease(key))).getKvs();
        return found.isEmpty() ? null : found.get(0);
    }

    private void revokeLater(long leaseId) {
        if (leaseId == 0) {
            return;
        }
        // Not awaited: an etcd lease that is not revoked simply expires at its TTL.
        leases.revoke(leaseId).whenComplete((response, failure) -> {
            if (failure != null) {
                log.debug("revoking etcd lease {} failed; it expires at its TTL", leaseId, failure);
            }
        });
    }

    private void forget(String rendered, String owner) {
        bound.computeIfPresent(rendered, (k, known) -> known.owner().equals(owner) ? null : known);
    }

    private <T> T call(String operation, LockKey key, CompletableFuture<T> future) {
        return call(operation, key.render(), future);
    }

    private <T> T call(String operation, String what, CompletableFuture<T> future) {
        try {
            return future.get(timeout.toMillis(), TimeUnit.MILLISECONDS);
        } catch (InterruptedException e) {
            future.cancel(true);
            Thread.currentThread().interrupt();
            throw new LeaseStoreException(operation, what, e);
        } catch (TimeoutException e) {
            future.cancel(true);
            throw new LeaseStoreException(
                    operation, what, new TimeoutException("etcd did not answer within " + timeout));
        } catch (ExecutionException e) {
            throw new LeaseStoreException(operation, what, e.getCause());
        }
    }

    private Grant grant(long fence, long ttlSeconds) {
        Duration remaining = Duration.ofSeconds(ttlSeconds);
        return new Grant(fence, remaining, clock.instant().plus(remaining));
    }

    private long ttlSeconds(Duration leaseFor) {
        Objects.requireNonNull(leaseFor, "leaseFor is missing (null)");
        if (leaseFor.isNegative() || leaseFor.isZero()) {
            throw new IllegalArgumentException("leaseFor must be > 0, was " + leaseFor);
        }
        long seconds = leaseFor.getSeconds() + (leaseFor.getNano() > 0 ? 1 : 0);
        return Math.max(shortestTtl.get(), seconds);
    }

    private static boolean ownedBy(KeyValue current, String owner) {
        return current != null
                && current.getValue().toString(StandardCharsets.UTF_8).equals(owner);
    }

    private static void checkOwner(LockKey key, String owner) {
        Objects.requireNonNull(key, "key is missing (null)");
        OwnerTokens.check(owner);
    }

    private static ByteSequence prefixEnd(ByteSequence prefix) {
        byte[] end = prefix.getBytes().clone();
        for (int i = end.length - 1; i >= 0; i--) {
            if (end[i] != (byte) 0xff) {
                end[i]++;
                return ByteSequence.from(java.util.Arrays.copyOf(end, i + 1));
            }
        }
        return ByteSequence.from(new byte[] {0});
    }

    /** Builds an {@link EtcdLeaseStore}. */
    public static final class Builder {
        private final Client client;
        private String keyPrefix = "leasehold/";
        private Duration timeout = Duration.ofSeconds(5);
        private Clock clock = Clock.systemUTC();

        private Builder(Client client) {
            this.client = client;
        }

        /**
         * The prefix of every etcd key (default {@code leasehold/}): 1 to 64 letters, digits and
         * {@code _ . : / -}.
         *
         * @throws IllegalArgumentException naming the value if it is malformed
         */
        public Builder keyPrefix(String keyPrefix) {
            if (keyPrefix == null || !PREFIX.matcher(keyPrefix).matches()) {
                throw new IllegalArgumentException(
                        "keyPrefix must be 1 to 64 letters, digits, '_', '.', ':', '/' or '-', was '" + keyPrefix
                                + "'");
            }
            this.keyPrefix = keyPrefix;
            return this;
        }

        /**
         * How long one etcd call may take before it fails with a {@link LeaseStoreException}
         * (default 5 s); keep it shorter than your leases.
         *
         * @throws IllegalArgumentException if it is not positive
         */
        public Builder timeout(Duration timeout) {
            Objects.requireNonNull(timeout, "timeout is missing (null)");
            if (timeout.isNegative() || timeout.isZero()) {
                throw new IllegalArgumentException("timeout must be > 0, was " + timeout);
            }
            this.timeout = timeout;
            return this;
        }

        /** The clock that dates reported expiry instants (default UTC); expiry itself is etcd's. */
        public Builder clock(Clock clock) {
            this.clock = Objects.requireNonNull(clock, "clock is missing (null)");
            return this;
        }

        /** Returns the store; it talks to etcd on its first call. */
        public EtcdLeaseStore build() {
            return new EtcdLeaseStore(this);
        }
    }
}
