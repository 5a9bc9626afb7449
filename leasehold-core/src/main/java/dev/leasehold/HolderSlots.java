package dev.leasehold;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import java.util.concurrent.locks.ReentrantLock;

/**
 * The current grant of every holder on every key, one slot each. A slot's lock orders one
 * holder's acquisitions of one key; only callers of that holder and key take it, and nothing a
 * store callback runs does. A slot without a lease is retired (removed) under its lock, so a
 * caller that locked a retired slot tries again with the current one. Thread-safe.
 */
final class HolderSlots {

    /** Who holds, and on which key: a thread, an explicit {@link LockOwner}, or one acquisition. */
    record HolderKey(Object owner, LockKey key) {}

    /** The current grant of one holder key; its lock orders that holder's acquisitions. */
    static final class HolderSlot {
        final ReentrantLock lock = new ReentrantLock();
        final AtomicReference<HeldLease> lease = new AtomicReference<>();
    }

    private final ConcurrentHashMap<HolderKey, HolderSlot> holders = new ConcurrentHashMap<>();
    private final Ticker ticker;

    HolderSlots(Ticker ticker) {
        this.ticker = ticker;
    }

    /**
     * The holder's current slot for the key, locked; with {@code bounded}, null if it could not be
     * locked by {@code deadline}.
     */
    HolderSlot lock(HolderKey holderKey, boolean bounded, long deadline) throws InterruptedException {
        while (true) {
            HolderSlot slot = holders.computeIfAbsent(holderKey, k -> new HolderSlot());
            if (bounded) {
                long left = deadline - ticker.nanos();
                if (left <= 0 || !slot.lock.tryLock(left, TimeUnit.NANOSECONDS)) {
                    return null;
                }
            } else {
                slot.lock.lock();
            }
            if (holders.get(holderKey) == slot) {
                return slot;
            }
            slot.lock.unlock(); // retired while we waited for its lock
        }
    }

    /** Forgets a slot that holds no lease; the caller holds its lock. */
    void retire(HolderKey holderKey, HolderSlot slot) {
        if (slot.lease.get() == null) {
            holders.remove(holderKey, slot);
        }
    }

    /** A lease at its last release: it is no longer the holder's current grant. */
    void forget(HeldLease lease) {
        HolderSlot slot = lease.slot;
        if (slot.lease.compareAndSet(lease, null) && slot.lock.tryLock()) {
            try {
                retire(lease.holderKey, slot);
            } finally {
                slot.lock.unlock();
            }
        }
    }

    /** Every current grant, of every holder and key. */
    List<HeldLease> leases() {
        List<HeldLease> found = new ArrayList<>();
        for (HolderSlot slot : holders.values()) {
            HeldLease lease = slot.lease.get();
            if (lease != null) {
                found.add(lease);
            }
        }
        return found;
    }

    /** The current grants on the key, of every holder. */
    List<HeldLease> leasesOn(LockKey key) {
        List<HeldLease> found = new ArrayList<>();
        holders.forEach((holderKey, slot) -> {
            HeldLease lease = slot.lease.get();
            if (holderKey.key().equals(key) && lease != null) {
                found.add(lease);
            }
        });
        return found;
    }

    /** How many slots are tracked: one per holder and key with a lease or an attempt in progress. */
    int size() {
        return holders.size();
    }
}
