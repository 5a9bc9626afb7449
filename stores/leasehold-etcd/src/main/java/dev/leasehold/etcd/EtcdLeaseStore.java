package dev.leasehold.etcd;

import static dev.leasehold.etcd.EtcdBindings.ownedBy;
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
import dev.leasehold.spi.Renewal;
import io.etcd.jetcd.ByteSequence;
import io.etcd.jetcd.Client;
import io.etcd.jetcd.KV;
import io.etcd.jetcd.KeyValue;
import io.etcd.jetcd.kv.GetResponse;
import io.etcd.jetcd.kv.TxnResponse;
import io.etcd.jetcd.lease.LeaseGrantResponse;
import io.etcd.jetcd.op.Cmp;
import io.etcd.jetcd.op.CmpTarget;
import io.etcd.jetcd.op.Op;
import io.etcd.jetcd.options.DeleteOption;
import io.etcd.jetcd.options.GetOption;
import io.etcd.jetcd.options.PutOption;
import java.nio.charset.StandardCharsets;
import java.time.Clock;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.Consumer;
import java.util.regex.Pattern;

/**
 * A {@link LeaseStore} on etcd through jetcd: the consensus-backed store, whose grants, fences and
 * expiry do not depend on any client's timing.
 *
 * <p>Each lock is one etcd key whose value is the owner token, bound to an etcd lease that the
 * store shares among the keys it grants (one per lease length, replaced every minute), so a
 * renewal batch keeps many keys alive with one keep-alive; every operation whose condition must
 * hold is one etcd transaction. The fence is the key's create revision, which only grows, across
 * expiry, force-release, restarts and leader changes. Expiry is etcd's lease TTL, in whole seconds
 * and at least etcd's shortest lease; a grant reports what is left of its etcd lease, at least five
 * sixths of that TTL. An owner's key is never deleted by its own unanswered call. The protocol is
 * described in {@code docs/design/etcd.md}.
 *
 * <p>etcd reports remaining times, not instants: {@code expiresAt} is this JVM's clock plus the
 * remaining time, for display only. Thread-safe. Every etcd call waits at most the builder's
 * timeout (a transaction without an answer is followed by one more, to learn its outcome); a
 * failure or timeout is a {@link LeaseStoreException} naming the key.
 */
public final class EtcdLeaseStore implements LeaseStore {

    private static final Pattern PREFIX = Pattern.compile("[A-Za-z0-9_.:/\\-]{1,64}");

    /** How long force markers stay; watchers see them at once, nothing reads them later. */
    private static final long MARKER_TTL_SECONDS = 10;

    private static final int ATTEMPTS = 5;

    private final KV kv;
    private final EtcdCalls calls;
    private final EtcdBindings bindings;
    private final EtcdWatches watches;
    private final EtcdKeys keys;
    private final Clock clock;
    private final EtcdRenewals renewals;
    private final EtcdOrphans orphans;

    private final AtomicBoolean closed = new AtomicBoolean();

    private EtcdLeaseStore(Builder builder) {
        this.kv = builder.client.getKVClient();
        this.keys = new EtcdKeys(builder.keyPrefix);
        this.calls = new EtcdCalls(builder.timeout);
        this.bindings = new EtcdBindings(kv, builder.client.getLeaseClient(), keys, calls);
        this.watches = new EtcdWatches(builder.client.getWatchClient(), keys, builder.timeout);
        this.clock = builder.clock;
        this.orphans = new EtcdOrphans(kv, keys, builder.timeout);
        this.renewals =
                new EtcdRenewals(kv, keys, calls, bindings, this::grant, r -> renew(r.key(), r.owner(), r.leaseFor()));
    }

    /** A builder for a store on the cluster {@code client} talks to; the client stays the caller's. */
    public static Builder builder(Client client) {
        return new Builder(Objects.requireNonNull(client, "client is missing (null)"));
    }

    // ---------------------------------------------------------------- acquire, renew, release

    @Override
    public AcquireResult tryAcquire(LockKey key, String owner, Duration leaseFor) {
        checkOwner(key, owner);
        long ttl = bindings.ttlSeconds(leaseFor);
        orphans.forget(key, owner); // before the grant is sent: no later delete may remove it
        orphans.retry();
        for (int attempt = 1; ; attempt++) {
            EtcdBindings.Shared lease = bindings.sharedLease("acquire", key, ttl);
            AcquireResult result = tryAcquire(key, owner, lease, attempt == ATTEMPTS);
            if (result != null) {
                return result;
            }
            bindings.retire(lease.id()); // gone at etcd, or settled: the next attempt binds to a new one
        }
    }

    /**
     * One transaction binding the key to {@code lease}: granted, busy, or null when the lease cannot
     * take it (etcd no longer has it, or its settle marker is put) and {@code last} is false.
     */
    private AcquireResult tryAcquire(LockKey key, String owner, EtcdBindings.Shared lease, boolean last) {
        ByteSequence leaseKey = keys.lease(key);
        ByteSequence value = bytes(owner);
        Cmp unsettled = bindings.unsettled(lease.id());
        PutOption bind = PutOption.builder().withLeaseId(lease.id()).build();
        PutOption rebind =
                PutOption.builder().withLeaseId(lease.id()).withPrevKV().build();
        // What is left of the lease when the request leaves, not when its answer arrives: the
        // engine counts the grant from its own send, so a round trip is not subtracted twice.
        Duration left = lease.remaining(System.nanoTime());
        TxnResponse txn;
        try {
            txn = calls.call(
                    "acquire",
                    key,
                    kv.txn()
                            // IF the key does not exist THEN grant it on the shared lease
                            .If(new Cmp(leaseKey, Cmp.Op.EQUAL, CmpTarget.createRevision(0)), unsettled)
                            .Then(Op.put(leaseKey, value, bind))
                            .Else(Op.txn(
                                    // ELSE IF it is ours THEN bind it to the shared lease (the fence stays)
                                    new Cmp[] {new Cmp(leaseKey, Cmp.Op.EQUAL, CmpTarget.value(value)), unsettled},
                                    new Op[] {Op.put(leaseKey, value, rebind)},
                                    // ELSE read the holder (busy)
                                    new Op[] {Op.get(leaseKey, GetOption.DEFAULT)}))
                            .commit());
        } catch (LeaseStoreException failed) {
            if (EtcdBindings.leaseGone(failed)) {
                if (last) {
                    throw failed;
                }
                return null; // etcd answered: the lease expired or was revoked, nothing was written
            }
            // No answer: bindings.settle() learns whether it was applied.
            KeyValue applied = bindings.settle("acquire", key, owner, lease.id(), failed);
            bindings.remember(key.render(), owner, lease.id());
            return new AcquireResult.Granted(grant(applied.getCreateRevision(), left));
        }
        if (txn.isSucceeded()) {
            bindings.remember(key.render(), owner, lease.id());
            // The put is the transaction's only write: the key's create revision is its revision.
            return new AcquireResult.Granted(grant(txn.getHeader().getRevision(), left));
        }
        TxnResponse nested = txn.getTxnResponses().get(0);
        if (nested.isSucceeded()) {
            KeyValue previous = nested.getPutResponses().get(0).getPrevKv();
            bindings.remember(key.render(), owner, lease.id());
            return new AcquireResult.Granted(grant(previous.getCreateRevision(), left));
        }
        List<KeyValue> holder = nested.getGetResponses().get(0).getKvs();
        if (holder.isEmpty() || ownedBy(holder.get(0), owner)) {
            // Free, or ours, and still not granted: the lease's settle marker is put.
            return last ? new AcquireResult.Busy(Duration.ZERO) : null;
        }
        return new AcquireResult.Busy(
                bindings.holderRemaining(key, holder.get(0).getLease()));
    }

    @Override
    public Optional<Grant> renew(LockKey key, String owner, Duration leaseFor) {
        checkOwner(key, owner);
        orphans.retry();
        long ttl = bindings.ttlSeconds(leaseFor);
        String rendered = key.render();
        Long known = bindings.leaseOf(rendered, owner);
        long leaseId;
        if (known != null) {
            leaseId = known;
        } else {
            KeyValue current = read("renew", key);
            if (!ownedBy(current, owner)) {
                bindings.forget(rendered, owner);
                return Optional.empty();
            }
            leaseId = current.getLease();
        }
        for (int attempt = 0; attempt < ATTEMPTS; attempt++) {
            long granted = bindings.keepAlive(key, leaseId);
            // Read after the keep-alive: if the key is still ours on that lease now, the lease was
            // extended while it held the key, so the grant below is never longer than the truth.
            KeyValue current = read("renew", key);
            if (!ownedBy(current, owner)) {
                bindings.forget(rendered, owner);
                return Optional.empty();
            }
            if (current.getLease() != leaseId) {
                // The same owner re-acquired the key elsewhere and bound it to a newer lease.
                leaseId = current.getLease();
                continue;
            }
            if (granted <= 0) {
                bindings.forget(rendered, owner);
                return Optional.empty();
            }
            if (granted != ttl) {
                return rebind(key, owner, ttl);
            }
            bindings.remember(rendered, owner, leaseId);
            return Optional.of(grant(current.getCreateRevision(), granted));
        }
        return Optional.empty();
    }

    /**
     * Renews the batch with its keep-alives in flight at once and one transaction reading its keys
     * back: two waits for up to {@value EtcdRenewals#LIMIT} leases. A lease judged as {@link #renew}
     * judges it; one this store did not bind, or that changes length, is renewed on its own.
     */
    @Override
    public List<Optional<Grant>> renewAll(List<Renewal> batch) {
        orphans.retry();
        return renewals.renew(batch);
    }

    @Override
    public int renewalBatchLimit() {
        return EtcdRenewals.LIMIT;
    }

    /**
     * Binds the owner's key to the shared lease of another length, if the owner still holds it.
     * The lease it was on is not revoked: other keys may be on it.
     */
    private Optional<Grant> rebind(LockKey key, String owner, long ttl) {
        ByteSequence leaseKey = keys.lease(key);
        ByteSequence value = bytes(owner);
        for (int attempt = 1; ; attempt++) {
            EtcdBindings.Shared lease = bindings.sharedLease("renew", key, ttl);
            Duration left = lease.remaining(System.nanoTime()); // at the send, as in tryAcquire
            TxnResponse txn;
            try {
                txn = calls.call(
                        "renew",
                        key,
                        kv.txn()
                                // IF the key is ours THEN bind it to the shared lease (the fence stays)
                                .If(
                                        new Cmp(leaseKey, Cmp.Op.EQUAL, CmpTarget.value(value)),
                                        bindings.unsettled(lease.id()))
                                .Then(Op.put(
                                        leaseKey,
                                        value,
                                        PutOption.builder()
                                                .withLeaseId(lease.id())
                                                .withPrevKV()
                                                .build()))
                                .Else(Op.get(leaseKey, GetOption.DEFAULT))
                                .commit());
            } catch (LeaseStoreException failed) {
                if (EtcdBindings.leaseGone(failed)) {
                    if (attempt == ATTEMPTS) {
                        throw failed; // refused: nothing was written
                    }
                    bindings.retire(lease.id());
                    continue;
                }
                KeyValue applied = bindings.settle("renew", key, owner, lease.id(), failed);
                bindings.remember(key.render(), owner, lease.id());
                return Optional.of(grant(applied.getCreateRevision(), left));
            }
            if (txn.isSucceeded()) {
                KeyValue previous = txn.getPutResponses().get(0).getPrevKv();
                bindings.remember(key.render(), owner, lease.id());
                return Optional.of(grant(previous.getCreateRevision(), left));
            }
            if (attempt < ATTEMPTS && ownedBy(firstOf(txn.getGetResponses().get(0)), owner)) {
                bindings.retire(lease.id()); // ours, and not bound: the lease's settle marker is put
                continue;
            }
            bindings.forget(key.render(), owner);
            return Optional.empty();
        }
    }

    private static KeyValue firstOf(GetResponse response) {
        return response.getKvs().isEmpty() ? null : response.getKvs().get(0);
    }

    @Override
    public boolean release(LockKey key, String owner) {
        checkOwner(key, owner);
        ByteSequence leaseKey = keys.lease(key);
        bindings.forget(key.render(), owner);
        TxnResponse txn;
        try {
            txn = calls.call(
                    "release",
                    key,
                    kv.txn()
                            // IF the key is ours THEN delete it
                            .If(new Cmp(leaseKey, Cmp.Op.EQUAL, CmpTarget.value(bytes(owner))))
                            .Then(Op.delete(leaseKey, DeleteOption.DEFAULT))
                            .commit());
        } catch (LeaseStoreException failed) {
            // The other keys on its etcd lease keep it alive: send the delete again as they renew.
            orphans.add(key, owner);
            throw failed;
        }
        // The etcd lease is not revoked: other keys may be bound to it; unrenewed, it expires.
        return txn.isSucceeded();
    }

    // ---------------------------------------------------------------- operators

    @Override
    public Optional<LeaseInfo> inspect(LockKey key) {
        Objects.requireNonNull(key, "key is missing (null)");
        KeyValue current = read("inspect", key);
        return current == null ? Optional.empty() : info(key, current);
    }

    private Optional<LeaseInfo> info(LockKey key, KeyValue current) {
        long ttl = bindings.timeToLive("inspect", key, current.getLease());
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
            GetResponse response = calls.call("list", namespace + ":*", kv.get(from, page));
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
        LeaseGrantResponse markerLease = bindings.grantLease("force-release", key, MARKER_TTL_SECONDS);
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
            TxnResponse txn = calls.call(
                    "force-release",
                    key,
                    kv.txn()
                            // IF the key is still the grant just read (or still absent) THEN delete
                            // it and mark the deletion as forced, in the same revision
                            .If(new Cmp(leaseKey, Cmp.Op.EQUAL, CmpTarget.createRevision(fence)))
                            .Then(then.toArray(Op[]::new))
                            .commit());
            if (txn.isSucceeded()) {
                // The holder's etcd lease is not revoked: the holder's other keys may be bound to it.
                bindings.forget(key.render());
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
        return watches.subscribe(key, onRelease);
    }

    @Override
    public ReleaseSubscription subscribeForceReleases(Consumer<ReleaseNotice> onForceRelease) {
        Objects.requireNonNull(onForceRelease, "onForceRelease is missing (null)");
        return watches.subscribeForceReleases(onForceRelease);
    }

    @Override
    public String name() {
        return "etcd";
    }

    /** Closes this store's watches; the client stays open. */
    @Override
    public void close() {
        if (closed.compareAndSet(false, true)) {
            watches.close();
            bindings.clear();
            orphans.clear();
        }
    }

    // ---------------------------------------------------------------- etcd calls

    private KeyValue read(String operation, LockKey key) {
        List<KeyValue> found =
                calls.call(operation, key, kv.get(keys.lease(key))).getKvs();
        return found.isEmpty() ? null : found.get(0);
    }

    private Grant grant(long fence, long ttlSeconds) {
        return grant(fence, Duration.ofSeconds(ttlSeconds));
    }

    private Grant grant(long fence, Duration remaining) {
        return new Grant(fence, remaining, clock.instant().plus(remaining));
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
