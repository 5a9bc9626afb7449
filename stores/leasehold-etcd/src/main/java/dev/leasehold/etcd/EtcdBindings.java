package dev.leasehold.etcd;

import static dev.leasehold.etcd.EtcdKeys.bytes;

import dev.leasehold.LeaseStoreException;
import dev.leasehold.LockKey;
import io.etcd.jetcd.ByteSequence;
import io.etcd.jetcd.KV;
import io.etcd.jetcd.KeyValue;
import io.etcd.jetcd.Lease;
import io.etcd.jetcd.kv.TxnResponse;
import io.etcd.jetcd.lease.LeaseGrantResponse;
import io.etcd.jetcd.lease.LeaseKeepAliveResponse;
import io.etcd.jetcd.lease.NoSuchLeaseException;
import io.etcd.jetcd.op.Cmp;
import io.etcd.jetcd.op.CmpTarget;
import io.etcd.jetcd.op.Op;
import io.etcd.jetcd.options.GetOption;
import io.etcd.jetcd.options.LeaseOption;
import io.etcd.jetcd.options.PutOption;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The etcd leases behind the lock keys of one {@link EtcdLeaseStore}: grants them (learning etcd's
 * shortest lease), keeps them alive, reads their TTL, revokes them, remembers which lease holds
 * each key this store granted, and settles a transaction binding a key to a new lease that gave
 * no answer, so that an owner's key is never deleted by its own unanswered call. Thread-safe.
 */
final class EtcdBindings {

    private static final Logger log = LoggerFactory.getLogger(EtcdBindings.class);

    private final KV kv;
    private final Lease leases;
    private final EtcdKeys keys;
    private final EtcdCalls calls;

    /** etcd's shortest lease, in seconds, as learned from the grants it answered. */
    private final AtomicLong shortestTtl = new AtomicLong(1);

    /** The etcd lease of each grant this store made or renewed, so renewals need no lookup. */
    private final ConcurrentHashMap<String, Bound> bound = new ConcurrentHashMap<>();

    /** The etcd lease new grants of each length (in seconds) are bound to, while it serves. */
    private final ConcurrentHashMap<Long, Shared> shared = new ConcurrentHashMap<>();

    /** Every shared etcd lease this store granted, by id, until it has surely expired. */
    private final ConcurrentHashMap<Long, Shared> byId = new ConcurrentHashMap<>();

    private record Bound(String owner, long leaseId) {}

    /**
     * How long one shared etcd lease takes new grants at most, from its own grant: keys granted in
     * one such span share a lease, so a key its holder no longer renews stays in etcd at most as
     * long as the other keys of its span are renewed (see {@code docs/design/etcd.md}).
     */
    static final long SERVES_NANOS = TimeUnit.SECONDS.toNanos(60);

    /**
     * An etcd lease that the keys this store grants are bound to, shared by every key granted while
     * it serves: for {@link #SERVES_NANOS} after its grant was sent, and only while it was kept
     * alive within the last sixth of its TTL. {@code confirmedAt} is when the last request that etcd
     * answered with the lease alive was sent (its grant, or a keep-alive), in {@link
     * System#nanoTime()}: etcd keeps the lease at least {@code ttl} seconds after it. So a grant
     * bound to it has at least five sixths of the TTL left. A lease whose binding transaction went
     * unanswered is retired at once.
     */
    record Shared(long id, long ttl, long grantedAt, AtomicLong confirmedAt, AtomicBoolean retired) {

        boolean serves(long now) {
            return !retired.get()
                    && now - grantedAt < SERVES_NANOS
                    && now - confirmedAt.get() < TimeUnit.SECONDS.toNanos(ttl) / 6;
        }

        /** What is left of the lease at {@code now}, counted from the last request that confirmed it. */
        Duration remaining(long now) {
            return Duration.ofSeconds(ttl).minusNanos(now - confirmedAt.get());
        }

        /** etcd answered a keep-alive sent at {@code sentNanos} with the lease alive. */
        void confirmed(long sentNanos) {
            confirmedAt.accumulateAndGet(sentNanos, (last, sent) -> sent - last > 0 ? sent : last);
        }
    }

    EtcdBindings(KV kv, Lease leases, EtcdKeys keys, EtcdCalls calls) {
        this.kv = kv;
        this.leases = leases;
        this.keys = keys;
        this.calls = calls;
    }

    /** Remembers that the owner's grant of the rendered key is on {@code leaseId}. */
    void remember(String rendered, String owner, long leaseId) {
        bound.put(rendered, new Bound(owner, leaseId));
    }

    /** The etcd lease this store knows for the owner's grant of the rendered key, or null. */
    Long leaseOf(String rendered, String owner) {
        Bound known = bound.get(rendered);
        return known != null && known.owner().equals(owner) ? known.leaseId() : null;
    }

    /** Forgets the lease of the rendered key, whoever's it was. */
    void forget(String rendered) {
        bound.remove(rendered);
    }

    void clear() {
        bound.clear();
        shared.clear();
        byId.clear();
    }

    /**
     * The condition every transaction binding a key to {@code leaseId} carries: the lease's
     * settle marker does not exist. Once {@link #settle} has put it, that transaction can no
     * longer apply, however late it reaches etcd.
     */
    Cmp unsettled(long leaseId) {
        return new Cmp(keys.settleMarker(leaseId), Cmp.Op.EQUAL, CmpTarget.createRevision(0));
    }

    /**
     * Learns the outcome of a transaction binding {@code key} to the etcd lease {@code leaseId}
     * that failed without an answer (a timeout, an interrupt, a lost connection): it may have been
     * applied, and then the key is bound to that lease. One transaction puts the lease's settle
     * marker, so the pending transaction can no longer apply, and reads the key in the same
     * revision.
     *
     * <p>The lease is shared with other keys, so it is never revoked here; it is retired: no later
     * grant is bound to it, and it expires once nothing keeps it alive.
     *
     * @return the key, if the pending transaction was applied: the lease is the key's now
     * @throws LeaseStoreException {@code failure}, if it was not applied (the key is as it was),
     *     or if etcd did not answer this either (the key may be on the lease)
     */
    KeyValue settle(String operation, LockKey key, String owner, long leaseId, LeaseStoreException failure) {
        // An interrupt ends the wait for the answer, not the duty to learn the outcome.
        boolean interrupted = Thread.interrupted();
        ByteSequence marker = keys.settleMarker(leaseId);
        try {
            TxnResponse txn = calls.call(
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
                // The marker stays (it goes with the lease): were it deleted, a copy of the
                // transaction still on its way could bind the key again after its release.
                log.debug("{} of {}: etcd applied the transaction whose answer was lost", operation, key);
                return current;
            }
        } catch (LeaseStoreException unknown) {
            failure.addSuppressed(unknown);
            // The key may be bound to the lease: the next renewal reads which lease it is.
            forget(key.render(), owner);
            log.warn(
                    "{} of {}: the outcome is unknown; the key may be on etcd lease {} until it is released or"
                            + " the lease expires",
                    operation,
                    key,
                    leaseId);
        } finally {
            retire(leaseId); // the marker is put, or may be: no later binding to this lease could apply
            if (interrupted) {
                Thread.currentThread().interrupt();
            }
        }
        throw failure;
    }

    /**
     * The shared etcd lease to bind a new grant of {@code ttl} seconds to: the one that serves, or
     * a new one granted now. While keys are held and renewed, their keep-alives keep the lease
     * serving, so a store asks etcd for one lease per length per {@link #SERVES_NANOS}, however
     * many keys it grants.
     */
    Shared sharedLease(String operation, LockKey key, long ttl) {
        Shared current = shared.get(ttl);
        if (current != null && current.serves(System.nanoTime())) {
            return current;
        }
        long sent = System.nanoTime();
        LeaseGrantResponse lease = grantLease(operation, key, ttl);
        Shared fresh = new Shared(lease.getID(), lease.getTTL(), sent, new AtomicLong(sent), new AtomicBoolean());
        byId.values().removeIf(old -> sent - old.confirmedAt().get() > 2 * TimeUnit.SECONDS.toNanos(old.ttl()));
        byId.put(fresh.id(), fresh);
        // Of two callers that granted at once, the later grant stays for the next keys; the other's
        // lease holds the keys bound to it and expires once nothing renews them.
        shared.merge(
                ttl, fresh, (old, mine) -> old.grantedAt() - mine.grantedAt() > 0 && old.serves(sent) ? old : mine);
        return fresh;
    }

    /**
     * Stops binding new grants to {@code leaseId}: its settle marker is put (or may be), so every
     * later transaction binding a key to it would fail. The keys on it keep it while renewed.
     */
    void retire(long leaseId) {
        Shared lease = byId.get(leaseId);
        if (lease != null) {
            lease.retired().set(true);
        }
    }

    /**
     * What is left at {@code now} of a shared lease etcd confirmed alive within the last twelfth of
     * its TTL (counted from when that confirming request was sent), or null: a renewal of a key on
     * it needs no keep-alive of its own. Half the span for which the lease serves new grants, so
     * that renewals confirm it again before it stops serving.
     */
    Duration confirmedLately(long leaseId, long now) {
        Shared lease = byId.get(leaseId);
        if (lease == null || now - lease.confirmedAt().get() >= TimeUnit.SECONDS.toNanos(lease.ttl()) / 12) {
            return null;
        }
        return lease.remaining(now);
    }

    /** The TTL, in seconds, etcd granted a shared lease of this store, or 0 if it is not one. */
    long ttlOf(long leaseId) {
        Shared lease = byId.get(leaseId);
        return lease == null ? 0 : lease.ttl();
    }

    LeaseGrantResponse grantLease(String operation, LockKey key, long ttl) {
        LeaseGrantResponse lease = calls.call(operation, key, leases.grant(ttl));
        // etcd raises a lease shorter than its minimum to that minimum; remember it, so that a
        // renewal asking for the same length does not mistake it for a change of length.
        if (lease.getTTL() > ttl) {
            shortestTtl.accumulateAndGet(lease.getTTL(), Math::max);
        }
        return lease;
    }

    /** The TTL the lease was refreshed to, or 0 if etcd no longer has it. */
    long keepAlive(LockKey key, long leaseId) {
        return keptAlive(key, keepAliveAsync(leaseId), calls.deadline());
    }

    /**
     * Sends one keep-alive of {@code leaseId}; {@link #keptAlive} waits for its answer. An answer
     * with the lease alive confirms the shared lease it may be, from the moment it was sent.
     */
    CompletableFuture<LeaseKeepAliveResponse> keepAliveAsync(long leaseId) {
        long sent = System.nanoTime();
        CompletableFuture<LeaseKeepAliveResponse> answer = leases.keepAliveOnce(leaseId);
        answer.thenAccept(response -> {
            Shared lease = byId.get(leaseId);
            if (response.getTTL() > 0 && lease != null) {
                lease.confirmed(sent);
            }
        });
        return answer;
    }

    /**
     * The TTL etcd gave the lease by the keep-alive {@code sent}, or 0 if the lease is gone; waits
     * until {@code deadlineNanos} at most.
     */
    long keptAlive(LockKey key, CompletableFuture<LeaseKeepAliveResponse> sent, long deadlineNanos) {
        try {
            return calls.call("renew", key.render(), sent, deadlineNanos).getTTL();
        } catch (LeaseStoreException e) {
            if (leaseGone(e)) {
                return 0;
            }
            throw e;
        }
    }

    /** Remaining whole seconds of a lease, or -1 if it is gone. */
    long timeToLive(String operation, LockKey key, long leaseId) {
        if (leaseId == 0) {
            return Duration.ofDays(1).toSeconds(); // a key put by hand without a lease never expires
        }
        return calls.call(operation, key, leases.timeToLive(leaseId, LeaseOption.DEFAULT))
                .getTTL();
    }

    /** etcd reports whole seconds, rounded down: the holder's lease ends before one more second. */
    Duration holderRemaining(LockKey key, long leaseId) {
        long ttl = timeToLive("acquire", key, leaseId);
        return ttl < 0 ? Duration.ZERO : Duration.ofSeconds(ttl + 1);
    }

    /**
     * Whether etcd answered that the lease the call named does not exist (it expired, or was
     * revoked): nothing of the call was applied.
     */
    static boolean leaseGone(LeaseStoreException failure) {
        for (Throwable cause = failure.getCause(); cause != null; cause = cause.getCause()) {
            if (cause instanceof NoSuchLeaseException
                    || (cause.getMessage() != null && cause.getMessage().contains("requested lease not found"))) {
                return true;
            }
        }
        return false;
    }

    /** Forgets the lease of the owner's grant of the rendered key. */
    void forget(String rendered, String owner) {
        bound.computeIfPresent(rendered, (k, known) -> known.owner().equals(owner) ? null : known);
    }

    long ttlSeconds(Duration leaseFor) {
        Objects.requireNonNull(leaseFor, "leaseFor is missing (null)");
        if (leaseFor.isNegative() || leaseFor.isZero()) {
            throw new IllegalArgumentException("leaseFor must be > 0, was " + leaseFor);
        }
        long seconds = leaseFor.getSeconds() + (leaseFor.getNano() > 0 ? 1 : 0);
        return Math.max(shortestTtl.get(), seconds);
    }

    static boolean ownedBy(KeyValue current, String owner) {
        return current != null
                && current.getValue().toString(StandardCharsets.UTF_8).equals(owner);
    }
}
