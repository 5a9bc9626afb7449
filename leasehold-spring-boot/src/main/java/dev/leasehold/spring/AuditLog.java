package dev.leasehold.spring;

import dev.leasehold.LeaseEvent;
import dev.leasehold.LeaseListener;
import java.net.InetAddress;
import java.net.UnknownHostException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The audit log (S2.13): one structured line per acquire, busy, release, loss and force-release on
 * logger {@code leasehold.audit}, with key, abbreviated owner, fence, wait and hold in
 * milliseconds, backend and host. Thread-safe.
 */
public final class AuditLog implements LeaseListener {

    private static final Logger log = LoggerFactory.getLogger("leasehold.audit");

    private final String host;

    /** An audit log naming this host. */
    public AuditLog() {
        String name;
        try {
            name = InetAddress.getLocalHost().getHostName();
        } catch (UnknownHostException e) {
            name = "unknown-host";
        }
        this.host = name;
    }

    @Override
    public void onEvent(LeaseEvent e) {
        switch (e.type()) {
            case ACQUIRED, BUSY, RELEASED, LOST, FORCE_RELEASED -> {
                String line =
                        "lease=" + e.type().name().toLowerCase(java.util.Locale.ROOT) + " key=" + e.key() + " owner="
                                + e.owner() + " fence=" + e.fence() + " waitMs="
                                + e.waited().toMillis() + " holdMs="
                                + e.held().toMillis() + " backend=" + e.store() + " host=" + host
                                + (e.detail() == null ? "" : " detail=\"" + e.detail() + "\"");
                if (e.type() == dev.leasehold.LeaseEventType.LOST
                        || e.type() == dev.leasehold.LeaseEventType.FORCE_RELEASED) {
                    log.warn(line);
                } else {
                    log.info(line);
                }
            }
            default -> {
                // renewals and re-entries are not audited
            }
        }
    }
}
