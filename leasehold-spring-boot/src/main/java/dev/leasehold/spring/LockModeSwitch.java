package dev.leasehold.spring;

import java.util.concurrent.atomic.AtomicReference;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The degrade switch (S2.14): whether {@code @Locked} takes locks, changeable at runtime (through the
 * {@code leaseholdmode} actuator endpoint or this bean). In BYPASS, locked methods run without a
 * lock and the database safety net (unique keys, CAS updates) is the only protection; every bypassed
 * call is logged and counted. Thread-safe.
 */
public final class LockModeSwitch {

    private static final Logger log = LoggerFactory.getLogger("leasehold.audit");

    private final AtomicReference<LeaseholdProperties.Mode> mode;

    /** A switch starting in {@code initial}. */
    public LockModeSwitch(LeaseholdProperties.Mode initial) {
        this.mode = new AtomicReference<>(initial);
        if (initial == LeaseholdProperties.Mode.BYPASS) {
            log.warn(
                    "lock-mode=BYPASS at startup: @Locked methods run WITHOUT locks; the database safety net alone protects data");
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

    /** Changes the mode; logged to the audit log with who asked and why (escaped). */
    public void set(LeaseholdProperties.Mode next, String by, String reason) {
        LeaseholdProperties.Mode previous = mode.getAndSet(next);
        if (previous != next) {
            log.atWarn()
                    .addKeyValue("event", "lock-mode")
                    .addKeyValue("from", previous.name())
                    .addKeyValue("to", next.name())
                    .addKeyValue("by", AuditText.clean(by))
                    .addKeyValue("reason", AuditText.clean(reason))
                    .log(
                            "lock-mode {} -> {} by={} reason=\"{}\"",
                            previous,
                            next,
                            AuditText.clean(by),
                            AuditText.clean(reason));
        }
    }
}
