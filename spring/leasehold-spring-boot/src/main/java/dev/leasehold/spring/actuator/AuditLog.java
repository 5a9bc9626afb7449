package dev.leasehold.spring.actuator;

import dev.leasehold.LeaseEvent;
import dev.leasehold.LeaseEventType;
import dev.leasehold.LeaseListener;
import dev.leasehold.spring.internal.AuditLine;
import java.net.InetAddress;
import java.net.UnknownHostException;
import java.util.Locale;
import org.slf4j.event.Level;

/**
 * The audit log: one event per acquire, busy, release, loss and force-release on logger
 * {@code leasehold.audit}, written by {@link AuditLine} with the fields {@code event} ({@code
 * lease.acquired}, {@code lease.busy}, {@code lease.released}, {@code lease.lost}, {@code
 * lease.force-released}), {@code key}, {@code owner} (abbreviated), {@code fence}, {@code waitMs},
 * {@code holdMs}, {@code backend}, {@code host} and, when there is one, {@code detail}, in that
 * order, as the message and as SLF4J 2 key-value pairs that structured logging (logstash, ECS,
 * GELF) turns into fields. Thread-safe.
 */
public final class AuditLog implements LeaseListener {

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
                boolean alarming = e.type() == LeaseEventType.LOST || e.type() == LeaseEventType.FORCE_RELEASED;
                String type = e.type().name().toLowerCase(Locale.ROOT).replace('_', '-');
                AuditLine line = AuditLine.of("lease." + type)
                        .text("key", e.key().render())
                        .text("owner", e.owner())
                        .number("fence", e.fence())
                        .number("waitMs", e.waited().toMillis())
                        .number("holdMs", e.held().toMillis())
                        .text("backend", e.store())
                        .text("host", host);
                if (e.detail() != null) {
                    line.text("detail", e.detail());
                }
                line.log(alarming ? Level.WARN : Level.INFO);
            }
            default -> {
                // renewals and re-entries are not audited
            }
        }
    }
}
