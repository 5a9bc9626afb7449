package dev.leasehold.examples.loan;

import java.time.Duration;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import org.springframework.beans.factory.annotation.Value;
import org.springframework.stereotype.Component;

/**
 * Counts operations inside each note's critical section in this instance, and the most ever seen
 * at once: the storm report prints it, and it must never exceed 1 while locks are enforced. Can also
 * stretch the critical section ({@code loan.critical-section-delay}), to make races visible.
 */
@Component
public class ConcurrencyProbe {

    private final ConcurrentHashMap<String, AtomicInteger> inside = new ConcurrentHashMap<>();
    private final AtomicInteger maxInside = new AtomicInteger();
    private final AtomicReference<Duration> delay;

    ConcurrencyProbe(@Value("${loan.critical-section-delay:0ms}") Duration delay) {
        this.delay = new AtomicReference<>(delay);
    }

    void enter(String tenant, String borrowNo) {
        int now = inside.computeIfAbsent(tenant + ":" + borrowNo, k -> new AtomicInteger())
                .incrementAndGet();
        maxInside.accumulateAndGet(now, Math::max);
    }

    void exit(String tenant, String borrowNo) {
        AtomicInteger count = inside.get(tenant + ":" + borrowNo);
        if (count.decrementAndGet() == 0) {
            inside.remove(tenant + ":" + borrowNo, count);
        }
    }

    /** Holds the critical section for the configured delay (none by default). */
    void pause() {
        Duration d = delay.get();
        if (!d.isZero()) {
            try {
                Thread.sleep(d.toMillis());
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
    }

    /** Changes how long each critical section is held. */
    public void delay(Duration delay) {
        this.delay.set(delay);
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
