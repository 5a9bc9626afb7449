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

    private record Bound(String owner, long leaseId) {}

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

    /** Sends one keep-alive of {@code leaseId}; {@link #keptAlive} waits for its answer. */
    CompletableFuture<LeaseKeepAliveResponse> keepAliveAsync(long leaseId) {
        return leases.keepAliveOnce(leaseId);
    }

    /**
     * The TTL etcd gave the lease by the keep-alive {@code sent}, or 0 if the lease is gone; waits
     * until {@code deadlineNanos} at most.
     */
    long keptAlive(LockKey key, CompletableFuture<LeaseKeepAliveResponse> sent, long deadlineNanos) {
        try {
            return calls.call("renew", key.render(), sent, deadlineNanos).getTTL();
        } catch (LeaseStoreException e) {
            if (e.getCause() instanceof NoSuchLeaseException) {
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

    void revokeLater(long leaseId) {
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
