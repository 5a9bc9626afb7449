package dev.leasehold;

import java.time.Duration;

/**
 * A lease held through one {@link LockService}, as that service sees it: for operators and for the
 * stale-lease scan, which looks for leases held far longer than their lease time (a stuck
 * holder kept alive by renewal). Immutable; the owner is abbreviated.
 *
 * @param key the key
 * @param owner the abbreviated owner token
 * @param fence the fence
 * @param holdCount open holds (re-entry)
 * @param heldFor how long it has been held
 * @param leaseFor the lease time it was taken with
 */
public record HeldLeaseInfo(
        LockKey key, String owner, long fence, int holdCount, Duration heldFor, Duration leaseFor) {}
