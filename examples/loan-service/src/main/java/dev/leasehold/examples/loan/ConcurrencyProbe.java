package dev.leasehold.examples.loan;

import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;
import org.springframework.stereotype.Component;

/**
 * Counts operations inside each note's critical section in this instance, and the most ever seen
 * at once: the storm report prints it, and it must never exceed 1 while locks are enforced.
 */
@Component
public class ConcurrencyProbe {

    private final ConcurrentHashMap<String, AtomicInteger> inside = new ConcurrentHashMap<>();
    private final AtomicInteger maxInside = new AtomicInteger();

    void enter(String tenant, String borrowNo) {
        int now = inside.computeIfAbsent(tenant + ":" + borrowNo, k -> new AtomicInteger())
                .incrementAndGet();
        maxInside.accumulateAndGet(now, Math::max);
    }

    void exit(String tenant, String borrowNo) {
        inside.get(tenant + ":" + borrowNo).decrementAndGet();
    }

    /** The most operations ever inside one note's critical section at once. */
    public int maxInside() {
        return maxInside.get();
    }

    /** Starts counting afresh. */
    public void reset() {
        maxInside.set(0);
    }
}
