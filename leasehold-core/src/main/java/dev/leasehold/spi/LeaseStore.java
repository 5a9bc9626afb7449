package dev.leasehold.spi;

import dev.leasehold.LeaseInfo;
import dev.leasehold.LockKey;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Objects;
import java.util.Optional;
import java.util.function.Consumer;

/**
 * The backend SPI: where leases live. Waiting, re-entry, renewal scheduling, batches and events are
 * written once, in the engine above it.
 *
 * <p>One atomic step each (a Lua script, one SQL statement or transaction, an etcd transaction, a
 * map compute), so no caller sees a half-applied state: {@link #tryAcquire} in both forms
 * (including taking or keeping a waiter's place), {@link #renew}, {@link #release} (including
 * the hand-off to the next waiter), {@link #forceRelease}, {@link #inspect} and {@link
 * #leaveQueue}. Not atomic: {@link #tryAcquireAll} beyond what a store takes in one step (it is
 * all or nothing by releasing what it took), and {@link #list}, a snapshot key by key.
 *
 * <p>Every implementation passes the conformance suite in {@code leasehold-testkit}: expiry is
 * decided by the store's clock only; a key has at most one owner; a grant to a new owner carries a
 * fence greater than every fence granted before for the key, also after expiry and
 * force-release; renew and release act only for the current owner's token. Failures throw {@link
 * dev.leasehold.LeaseStoreException} naming the key; bad arguments throw {@link
 * IllegalArgumentException} or {@link NullPointerException} before anything is sent.
 * Implementations are thread-safe.
 */
public interface LeaseStore extends AutoCloseable {

    /**
     * Grants the key to {@code owner} for {@code leaseFor} if it is free, expired, or already held
     * by the same owner (then the lease is extended and the fence kept).
     */
    AcquireResult tryAcquire(LockKey key, String owner, Duration leaseFor);

    /**
     * {@link #tryAcquire(LockKey, String, Duration)} for a request that says whether the caller
     * waits: a store with a waiter queue lets only a {@linkplain AcquireRequest#waiting() waiter}
     * hold a place, never a single try. The default, for stores without a queue, asks as {@link
     * #tryAcquire(LockKey, String, Duration)}; the lock service asks this way.
     */
    default AcquireResult tryAcquire(AcquireRequest request) {
        return tryAcquire(request.key(), request.owner(), request.leaseFor());
    }

    /**
     * Whether this store has {@link #tryAcquireAsync}: an acquire whose answer is waited for
     * without a thread blocked on it. False (the default) for a store whose client blocks; the lock
     * service then calls {@link #tryAcquire(AcquireRequest)} on a worker of its own.
     */
    default boolean acquiresAsynchronously() {
        return false;
    }

    /**
     * {@link #tryAcquire(AcquireRequest)} as an answer to come, for a store whose client is
     * asynchronous: a caller that waits with a deadline then waits for the answer itself instead of
     * for a worker thread that waits for it. An answer that comes after the caller gave up is
     * handled as a late answer of {@link #tryAcquire} is (a grant is released). The stage must not
     * be completed on the calling thread while a lock of the store is held. Called only when {@link
     * #acquiresAsynchronously()} says so.
     *
     * @throws UnsupportedOperationException if {@link #acquiresAsynchronously()} is false
     */
    default java.util.concurrent.CompletionStage<AcquireResult> tryAcquireAsync(AcquireRequest request) {
        throw new UnsupportedOperationException(name() + " has no asynchronous acquire");
    }

    /**
     * Grants every key to {@code owner} for {@code leaseFor}, or none of them: the batch form of
     * {@link #tryAcquire}, for distinct keys in the order they are to be taken (sorted, as the
     * engine takes batches). A store that can take several keys in one atomic step does so (Redis:
     * keys on one shard, such as keys with one {@linkplain LockKey#withHashTag hash tag}, in one
     * script); the default takes them one by one and, when one is busy or a call fails, releases
     * what it took before it returns or throws. A key the owner already holds counts as granted
     * (extended, its fence kept) and is released with the others when the batch fails, so the
     * owner token should be one that holds none of the keys.
     *
     * @throws IllegalArgumentException if {@code keys} is empty or names a key twice
     */
    default BatchAcquireResult tryAcquireAll(List<LockKey> keys, String owner, Duration leaseFor) {
        checkBatch(keys);
        List<LockKey> taken = new ArrayList<>(keys.size());
        List<Grant> grants = new ArrayList<>(keys.size());
        for (LockKey key : keys) {
            AcquireResult result;
            try {
                result = tryAcquire(AcquireRequest.once(key, owner, leaseFor));
            } catch (RuntimeException | Error e) {
                taken.add(key); // the failed call may have been applied: release it too
                releaseAll(taken, owner, e);
                throw e;
            }
            if (result instanceof AcquireResult.Busy busy) {
                releaseAll(taken, owner, null);
                return new BatchAcquireResult.Busy(key, busy.holderRemaining());
            }
            taken.add(key);
            grants.add(((AcquireResult.Granted) result).grant());
        }
        return new BatchAcquireResult.Granted(grants);
    }

    /**
     * Checks a batch for {@link #tryAcquireAll}: at least one key, none missing, none twice.
     *
     * @throws IllegalArgumentException if it is empty or names a key twice
     * @throws NullPointerException if it or a key is missing
     */
    static void checkBatch(List<LockKey> keys) {
        Objects.requireNonNull(keys, "keys are missing (null)");
        if (keys.isEmpty()) {
            throw new IllegalArgumentException("a batch needs at least one key");
        }
        HashSet<LockKey> seen = new HashSet<>();
        for (LockKey key : keys) {
            if (!seen.add(Objects.requireNonNull(key, "a key of the batch is missing (null)"))) {
                throw new IllegalArgumentException("key " + key + " is named twice in the batch");
            }
        }
    }

    /**
     * Releases every key taken, in reverse; a release that fails is added to {@code failure}, or,
     * without one, thrown once every other release was tried.
     */
    private void releaseAll(List<LockKey> taken, String owner, Throwable failure) {
        RuntimeException first = null;
        for (int i = taken.size() - 1; i >= 0; i--) {
            try {
                release(taken.get(i), owner);
            } catch (RuntimeException e) {
                if (failure != null) {
                    failure.addSuppressed(e);
                } else if (first == null) {
                    first = e;
                } else {
                    first.addSuppressed(e);
                }
            }
        }
        if (first != null) {
            throw first;
        }
    }

    /**
     * Extends the lease to {@code leaseFor} from now if {@code owner} still holds it.
     *
     * @return the extended grant, or empty if the owner no longer holds the key
     */
    Optional<Grant> renew(LockKey key, String owner, Duration leaseFor);

    /**
     * Renews every lease of the batch, each as {@link #renew} would. The answers are in the
     * batch's order, one per renewal: the extended grant, or empty where the owner no longer holds
     * the key. Each renewal is atomic on its own; the batch as a whole need not be. When the call
     * throws, none, some or all of the renewals may have been applied (a renewal is safe to
     * repeat). A store that knows which renewals failed and which were answered (a batch over
     * several servers, one of which failed) throws {@link PartialRenewalException} with both, and
     * each lease gets its own outcome. The default renews one lease after another. A decorator that changes what {@link
     * #renew} does must change this too: the engine renews through it whenever the store's batch
     * limit is above one.
     *
     * @throws dev.leasehold.LeaseStoreException if the store fails
     */
    default List<Optional<Grant>> renewAll(List<Renewal> batch) {
        List<Optional<Grant>> answers = new ArrayList<>(batch.size());
        for (Renewal renewal : batch) {
            answers.add(renew(renewal.key(), renewal.owner(), renewal.leaseFor()));
        }
        return answers;
    }

    /**
     * How many leases the engine should put in one {@link #renewAll} call (default 1: each lease is
     * renewed on its own, when it falls due). A store whose {@code renewAll} does the batch in one
     * round trip says how large a batch it takes; the engine then gathers the renewals that fall
     * due within a short window (a small fraction of the lease time) into batches of at most this
     * size.
     */
    default int renewalBatchLimit() {
        return 1;
    }

    /**
     * Releases the key if {@code owner} holds it, and notifies subscribers.
     *
     * @return whether the owner held it
     */
    boolean release(LockKey key, String owner);

    /** The current unexpired lease on the key, if any. */
    Optional<LeaseInfo> inspect(LockKey key);

    /**
     * Removes the lease on the key whoever holds it (an operator's tool), and notifies subscribers.
     * The next grant still gets a greater fence.
     *
     * @return whether a lease was removed
     */
    boolean forceRelease(LockKey key);

    /**
     * The unexpired leases whose keys start with {@code namespace + ":"}, at most {@code limit} of
     * them, for operators. Not atomic across keys: a snapshot.
     *
     * @throws UnsupportedOperationException if the store cannot list
     */
    default java.util.List<LeaseInfo> list(String namespace, int limit) {
        throw new UnsupportedOperationException(name() + " cannot list leases");
    }

    /**
     * Whether {@link #subscribe} and {@link #subscribeForceReleases} are supported: releases are
     * pushed rather than polled for.
     */
    default boolean supportsReleaseNotifications() {
        return false;
    }

    /**
     * Calls {@code onRelease} whenever the key is released or force-released, from any process,
     * until the subscription is closed. Returns once the subscription is active, so a release that
     * happens after the return is never missed. Several subscriptions to one key are independent.
     *
     * <p>The callback may run on the store client's I/O thread: it must not block, call the store,
     * or take a lock that a thread calling the store may hold. Hand work off instead.
     *
     * @throws UnsupportedOperationException if {@link #supportsReleaseNotifications()} is false
     */
    default ReleaseSubscription subscribe(LockKey key, Consumer<ReleaseNotice> onRelease) {
        throw new UnsupportedOperationException(name() + " does not push release notifications");
    }

    /**
     * Calls {@code onForceRelease} for every force-release of any key of this store, from any
     * process, until the subscription is closed, so that a holder anywhere learns its grant was
     * removed by an operator. Same callback rules as {@link #subscribe}.
     *
     * @throws UnsupportedOperationException if {@link #supportsReleaseNotifications()} is false
     */
    default ReleaseSubscription subscribeForceReleases(Consumer<ReleaseNotice> onForceRelease) {
        throw new UnsupportedOperationException(name() + " does not push release notifications");
    }

    /** A short, bounded name for logs and metric tags, such as {@code redis} or {@code postgresql}. */
    String name();

    /** Frees the store's own resources (connections it opened); not the backend's data. */
    @Override
    default void close() {}

    /**
     * A waiter that asked for {@code key} with {@code owner} ended its wait without the key (its
     * wait ran out, it was interrupted, the lock service closed, or an answer came after the wait):
     * a store that queues waiters drops its place, and gives a key that a release handed to it to
     * the next waiter at once, instead of holding the key for it until its place expires. The
     * default, for stores without a queue, does nothing. Best effort: the lock service never waits
     * for it and ignores a failure, after which the place ends at its queue TTL. It is called for
     * every wait that asked the store, also one whose asks got no answer.
     */
    default void leaveQueue(LockKey key, String owner) {}

    /**
     * Whether {@link #leaveQueue} only hands the leave to the store's asynchronous client and
     * returns without waiting for any answer. The lock service then calls it on the thread whose
     * wait ended, so that what that thread sends next reaches the store after the leave; otherwise
     * (the default) it runs {@link #leaveQueue} on a worker of its own.
     */
    default boolean leavesQueueWithoutBlocking() {
        return false;
    }
}
