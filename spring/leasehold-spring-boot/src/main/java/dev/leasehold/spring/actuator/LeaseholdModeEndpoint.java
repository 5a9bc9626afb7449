package dev.leasehold.spring.actuator;

import dev.leasehold.spring.LeaseholdProperties;
import dev.leasehold.spring.lock.LockModeSwitch;
import java.util.Locale;
import java.util.Map;
import org.springframework.boot.actuate.endpoint.SecurityContext;
import org.springframework.boot.actuate.endpoint.annotation.ReadOperation;
import org.springframework.boot.actuate.endpoint.annotation.WriteOperation;
import org.springframework.boot.actuate.endpoint.web.WebEndpointResponse;
import org.springframework.boot.actuate.endpoint.web.annotation.WebEndpoint;

/**
 * The degrade switch at runtime, at {@code /actuator/leaseholdmode}: GET the mode, POST
 * {@code {"mode": "bypass", "reason": ...}} to change it. Changing it needs the role {@code
 * leasehold.admin.role} and is audited.
 */
@WebEndpoint(id = "leaseholdmode")
public class LeaseholdModeEndpoint {

    private final LockModeSwitch mode;
    private final AdminGuard admin;

    LeaseholdModeEndpoint(LockModeSwitch mode, AdminGuard admin) {
        this.mode = mode;
        this.admin = admin;
    }

    @ReadOperation
    public Map<String, Object> mode() {
        return Map.of("mode", mode.mode().name());
    }

    @WriteOperation
    public WebEndpointResponse<Object> change(String mode, String reason, SecurityContext security) {
        WebEndpointResponse<Object> refused = admin.refusal(
                security, AdminAudit.MODE_CHANGE_DENIED, "changing the lock mode", line -> line.text("to", mode)
                        .text("reason", reason));
        if (refused != null) {
            return refused;
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
        // the switch logs the change; the Actuator event carries the same fields
        String who = AdminGuard.who(security);
        LeaseholdProperties.Mode previous = this.mode.set(next, who, reason);
        admin.audit()
                .publish(
                        AdminAudit.MODE_CHANGE,
                        AdminAudit.line(AdminAudit.MODE_CHANGE, who)
                                .text("from", previous.name())
                                .text("to", next.name())
                                .text("reason", reason));
        return new WebEndpointResponse<>(Map.of("mode", next.name()));
    }
}
