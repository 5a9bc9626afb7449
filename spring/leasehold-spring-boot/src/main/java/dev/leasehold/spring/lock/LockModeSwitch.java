package dev.leasehold.spring.lock;

import dev.leasehold.spring.LeaseholdProperties;
import dev.leasehold.spring.internal.AuditLine;
import java.util.concurrent.atomic.AtomicReference;
import org.slf4j.event.Level;

/**
 * The degrade switch: whether {@code @Locked} takes locks, changeable at runtime (through the
 * {@code leaseholdmode} actuator endpoint or this bean). In BYPASS, locked methods run without a
 * lock and the database safety net (unique keys, CAS updates) is the only protection; every bypassed
 * call is logged and counted. Thread-safe.
 */
public final class LockModeSwitch {

    private final AtomicReference<LeaseholdProperties.Mode> mode;

    /** A switch starting in {@code initial}. */
    public LockModeSwitch(LeaseholdProperties.Mode initial) {
        this.mode = new AtomicReference<>(initial);
        if (initial == LeaseholdProperties.Mode.BYPASS) {
            AuditLine.of("lock-mode.startup")
                    .text("mode", initial.name())
                    .text("effect", "@Locked methods run WITHOUT locks; the database safety net alone protects data")
                    .log(Level.WARN);
        }
    }

    /** The current mode. */
    public LeaseholdProperties.Mode mode() {
        return mode.get();
    }

    /** Whether locks are skipped. */
    public boolean bypassed() {
        return mode.get() == LeaseholdProperties.Mode.BYPASS;
    }

    /**
     * Changes the mode; logged to the audit log ({@code event=lock-mode}, {@code by}, {@code from},
     * {@code to}, {@code reason}, quoted and escaped) when the mode really changed.
     *
     * @return the mode before the change
     */
    public LeaseholdProperties.Mode set(LeaseholdProperties.Mode next, String by, String reason) {
        LeaseholdProperties.Mode previous = mode.getAndSet(next);
        if (previous != next) {
            AuditLine.of("lock-mode")
                    .text("by", by)
                    .text("from", previous.name())
                    .text("to", next.name())
                    .text("reason", reason)
                    .log(Level.WARN);
        }
        return previous;
    }
}
