package dev.leasehold.spring;

import java.util.concurrent.atomic.AtomicReference;
import org.slf4j.event.Level;

/**
 * The degrade switch (S2.14): whether {@code @Locked} takes locks, changeable at runtime (through the
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

    /** Changes the mode; logged to the audit log with who asked and why (quoted and escaped). */
    public void set(LeaseholdProperties.Mode next, String by, String reason) {
        change(next, by, reason);
    }

    /**
     * Changes the mode and returns the audit line of the change ({@code event=lock-mode}, {@code
     * by}, {@code from}, {@code to}, {@code reason}), written only when the mode really changed.
     */
    AuditLine change(LeaseholdProperties.Mode next, String by, String reason) {
        LeaseholdProperties.Mode previous = mode.getAndSet(next);
        AuditLine line = AdminAudit.line(AdminAudit.MODE_CHANGE, by)
                .text("from", previous.name())
                .text("to", next.name())
                .text("reason", reason);
        if (previous != next) {
            line.log(Level.WARN);
        }
        return line;
    }
}
