package dev.leasehold.spring;

import java.util.Locale;
import java.util.Map;
import org.springframework.boot.actuate.endpoint.SecurityContext;
import org.springframework.boot.actuate.endpoint.annotation.ReadOperation;
import org.springframework.boot.actuate.endpoint.annotation.WriteOperation;
import org.springframework.boot.actuate.endpoint.web.WebEndpointResponse;
import org.springframework.boot.actuate.endpoint.web.annotation.WebEndpoint;

/**
 * The degrade switch at runtime (S2.14), at {@code /actuator/leaseholdmode}: GET the mode, POST
 * {@code {"mode": "bypass", "reason": ...}} to change it. Changing it needs the role {@code
 * leasehold.admin.role} and is audited.
 */
@WebEndpoint(id = "leaseholdmode")
public class LeaseholdModeEndpoint {

    private final LockModeSwitch mode;
    private final LeaseholdProperties properties;
    private final AdminAudit audit;

    LeaseholdModeEndpoint(LockModeSwitch mode, LeaseholdProperties properties, AdminAudit audit) {
        this.mode = mode;
        this.properties = properties;
        this.audit = audit;
    }

    @ReadOperation
    public Map<String, Object> mode() {
        return Map.of("mode", mode.mode().name());
    }

    @WriteOperation
    public WebEndpointResponse<Object> change(String mode, String reason, SecurityContext security) {
        String role = properties.getAdmin().getRole();
        String who = security.getPrincipal() == null
                ? "anonymous"
                : security.getPrincipal().getName();
        if (!security.isUserInRole(role)) {
            audit.record(
                    AdminAudit.MODE_CHANGE_DENIED,
                    who,
                    "lock-mode change to {} REFUSED (needs role {}) by={}",
                    Map.of("mode", String.valueOf(mode), "role", role));
            return new WebEndpointResponse<>(Map.of("error", "changing the lock mode needs the role " + role), 403);
        }
        LeaseholdProperties.Mode next;
        try {
            next = LeaseholdProperties.Mode.valueOf(mode.trim().toUpperCase(Locale.ROOT));
        } catch (IllegalArgumentException | NullPointerException e) {
            return new WebEndpointResponse<>(Map.of("error", "mode must be enforce or bypass, was " + mode), 400);
        }
        if (reason == null || reason.isBlank()) {
            return new WebEndpointResponse<>(Map.of("error", "a mode change needs a reason for the audit log"), 400);
        }
        LeaseholdProperties.Mode previous = this.mode.mode();
        this.mode.set(next, who, reason);
        Map<String, Object> data = new java.util.LinkedHashMap<>();
        data.put("from", previous.name());
        data.put("to", next.name());
        data.put("reason", reason);
        audit.publish(AdminAudit.MODE_CHANGE, who, data); // the switch logs the change itself
        return new WebEndpointResponse<>(Map.of("mode", next.name()));
    }
}
