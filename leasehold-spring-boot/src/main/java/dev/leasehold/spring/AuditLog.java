package dev.leasehold.spring;

import dev.leasehold.LeaseEvent;
import dev.leasehold.LeaseEventType;
import dev.leasehold.LeaseListener;
import java.net.InetAddress;
import java.net.UnknownHostException;
import java.util.Locale;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.slf4j.event.Level;
import org.slf4j.spi.LoggingEventBuilder;

/**
 * The audit log (S2.13): one event per acquire, busy, release, loss and force-release on logger
 * {@code leasehold.audit}, as SLF4J 2 key-value pairs ({@code event}, {@code key}, {@code owner}
 * (abbreviated), {@code fence}, {@code waitMs}, {@code holdMs}, {@code backend}, {@code host},
 * {@code detail}) that structured logging (logstash, ECS, GELF) turns into fields, and the same
 * values in the message for plain-text logs. Every value is escaped ({@link AuditText}), so no input
 * can start a new line. Thread-safe.
 */
public final class AuditLog implements LeaseListener {

    static final String LOGGER = "leasehold.audit";
    private static final Logger log = LoggerFactory.getLogger(LOGGER);

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
                String key = AuditText.clean(e.key());
                String owner = AuditText.clean(e.owner());
                String detail = e.detail() == null ? null : AuditText.clean(e.detail());
                LoggingEventBuilder event = log.atLevel(alarming ? Level.WARN : Level.INFO)
                        .addKeyValue("event", "lease." + type)
                        .addKeyValue("key", key)
                        .addKeyValue("owner", owner)
                        .addKeyValue("fence", e.fence())
                        .addKeyValue("waitMs", e.waited().toMillis())
                        .addKeyValue("holdMs", e.held().toMillis())
                        .addKeyValue("backend", e.store())
                        .addKeyValue("host", host);
                if (detail != null) {
                    event = event.addKeyValue("detail", detail);
                }
                event.log(
                        "lease={} key={} owner={} fence={} waitMs={} holdMs={} backend={} host={}{}",
                        type,
                        key,
                        owner,
                        e.fence(),
                        e.waited().toMillis(),
                        e.held().toMillis(),
                        e.store(),
                        host,
                        detail == null ? "" : " detail=\"" + detail + "\"");
            }
            default -> {
                // renewals and re-entries are not audited
            }
        }
    }
}
