package dev.leasehold.spring;

import java.util.LinkedHashMap;
import java.util.Map;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.slf4j.spi.LoggingEventBuilder;
import org.springframework.boot.actuate.audit.listener.AuditApplicationEvent;
import org.springframework.context.ApplicationEventPublisher;

/**
 * Audits operator actions (force-release, mode change; granted or refused): one WARN event on
 * logger {@code leasehold.audit} with escaped key-value pairs, and an Actuator {@link
 * AuditApplicationEvent} (type {@code LEASEHOLD_*}) that Spring Boot stores in the application's
 * {@code AuditEventRepository} when it has one. Thread-safe.
 */
final class AdminAudit {

    /** Audit event types. */
    static final String FORCE_RELEASE = "LEASEHOLD_FORCE_RELEASE";

    static final String FORCE_RELEASE_DENIED = "LEASEHOLD_FORCE_RELEASE_DENIED";
    static final String MODE_CHANGE = "LEASEHOLD_MODE_CHANGE";
    static final String MODE_CHANGE_DENIED = "LEASEHOLD_MODE_CHANGE_DENIED";

    private static final Logger log = LoggerFactory.getLogger(AuditLog.LOGGER);

    private final ApplicationEventPublisher events;

    AdminAudit(ApplicationEventPublisher events) {
        this.events = events;
    }

    /**
     * Records an action by {@code who}; {@code data} values are caller input and are escaped.
     *
     * @param message the plain-text form, with {@code {}} for each data value in order
     */
    void record(String type, String who, String message, Map<String, Object> data) {
        String principal = AuditText.clean(who);
        Map<String, Object> clean = new LinkedHashMap<>();
        data.forEach((name, value) -> clean.put(name, value instanceof Boolean ? value : AuditText.clean(value)));
        LoggingEventBuilder event = log.atWarn()
                .addKeyValue("event", type.toLowerCase(java.util.Locale.ROOT))
                .addKeyValue("by", principal);
        for (Map.Entry<String, Object> entry : clean.entrySet()) {
            event = event.addKeyValue(entry.getKey(), entry.getValue());
        }
        Object[] arguments = new Object[clean.size() + 1];
        int i = 0;
        for (Object value : clean.values()) {
            arguments[i++] = value;
        }
        arguments[i] = principal;
        event.log(message, arguments);
        publish(type, principal, clean);
    }

    /** Publishes the Actuator audit event only (the action logged itself). */
    void publish(String type, String who, Map<String, Object> data) {
        if (events != null) {
            Map<String, Object> clean = new LinkedHashMap<>();
            data.forEach((name, value) -> clean.put(name, value instanceof Boolean ? value : AuditText.clean(value)));
            events.publishEvent(new AuditApplicationEvent(AuditText.clean(who), type, clean));
        }
    }
}
