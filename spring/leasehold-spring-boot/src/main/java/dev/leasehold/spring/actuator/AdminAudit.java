package dev.leasehold.spring.actuator;

import dev.leasehold.spring.internal.AuditLine;
import java.util.LinkedHashMap;
import java.util.Map;
import org.slf4j.event.Level;
import org.springframework.boot.actuate.audit.listener.AuditApplicationEvent;
import org.springframework.context.ApplicationEventPublisher;

/**
 * Audits operator actions (force-release, mode change; granted or refused): one WARN line on logger
 * {@code leasehold.audit}, written by {@link AuditLine}, and an Actuator {@link
 * AuditApplicationEvent} (type {@code LEASEHOLD_*}, data the line's fields after {@code by}) that
 * Spring Boot stores in the application's {@code AuditEventRepository} when it has one.
 * Thread-safe.
 */
final class AdminAudit {

    /** Audit event types. */
    static final String FORCE_RELEASE = "LEASEHOLD_FORCE_RELEASE";

    static final String FORCE_RELEASE_DENIED = "LEASEHOLD_FORCE_RELEASE_DENIED";
    static final String MODE_CHANGE = "LEASEHOLD_MODE_CHANGE";
    static final String MODE_CHANGE_DENIED = "LEASEHOLD_MODE_CHANGE_DENIED";

    private final ApplicationEventPublisher events;

    AdminAudit(ApplicationEventPublisher events) {
        this.events = events;
    }

    /**
     * The start of the line for an action of {@code type} by {@code who}: {@code event} (the type's
     * action, {@code .refused} for a refusal) then {@code by}; the caller adds the action's fields.
     */
    static AuditLine line(String type, String who) {
        String action = type.startsWith("LEASEHOLD_FORCE_RELEASE") ? "force-release" : "lock-mode";
        return AuditLine.of(type.endsWith("_DENIED") ? action + ".refused" : action)
                .text("by", who);
    }

    /** Writes {@code line} (begun with {@link #line}) and publishes it as the Actuator event {@code type}. */
    void record(String type, AuditLine line) {
        line.log(Level.WARN);
        publish(type, line);
    }

    /**
     * Publishes {@code line} (begun with {@link #line}) as the Actuator event {@code type} only, for
     * an action that was logged where it happened: principal {@code by}, data the other fields.
     */
    void publish(String type, AuditLine line) {
        if (events != null) {
            Map<String, Object> data = new LinkedHashMap<>(line.data());
            Object by = data.remove("by");
            events.publishEvent(new AuditApplicationEvent(String.valueOf(by), type, data));
        }
    }
}
