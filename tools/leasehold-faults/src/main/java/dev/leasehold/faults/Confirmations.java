package dev.leasehold.faults;

import dev.leasehold.Lease;
import dev.leasehold.LeaseEvent;
import dev.leasehold.LeaseEventType;
import dev.leasehold.LockOwner;
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

/**
 * A lease listener that remembers when the store last confirmed each grant (ACQUIRED, RENEWED) and
 * when it was reported LOST, so the time from the one to the other can be checked against the
 * lease. A grant is its key, fence and (abbreviated) owner: a repeated fence is two grants.
 * Thread-safe.
 */
final class Confirmations {

    private final Map<String, Long> confirmed = new ConcurrentHashMap<>();
    private final Map<String, Long> lost = new ConcurrentHashMap<>();

    void record(LeaseEvent event) {
        String grant = event.key().render() + "#" + event.fence() + "#" + event.owner();
        if (event.type() == LeaseEventType.ACQUIRED || event.type() == LeaseEventType.RENEWED) {
            confirmed.put(grant, System.nanoTime());
        } else if (event.type() == LeaseEventType.LOST) {
            lost.putIfAbsent(grant, System.nanoTime());
        }
    }

    private static String grant(Lease lease) {
        return lease.key().render() + "#" + lease.fence() + "#" + LockOwner.abbreviate(lease.ownerToken());
    }

    /** When the store last confirmed the lease ({@code System.nanoTime()}), or null. */
    Long lastConfirmed(Lease lease) {
        return confirmed.get(grant(lease));
    }

    /** From the last confirmation to the LOST event, or null if either is missing. */
    Duration lostAfterConfirmation(Lease lease) {
        Long at = lost.get(grant(lease));
        Long last = confirmed.get(grant(lease));
        return at == null || last == null ? null : Duration.ofNanos(at - last);
    }
}
