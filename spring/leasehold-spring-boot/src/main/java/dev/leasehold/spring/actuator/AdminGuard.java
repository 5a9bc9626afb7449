package dev.leasehold.spring.actuator;

import dev.leasehold.spring.LeaseholdProperties;
import dev.leasehold.spring.internal.AuditLine;
import java.util.Map;
import java.util.function.UnaryOperator;
import org.springframework.boot.actuate.endpoint.SecurityContext;
import org.springframework.boot.actuate.endpoint.web.WebEndpointResponse;

/**
 * The one admin check of the actuator write operations: a caller needs the role {@code
 * leasehold.admin.role}; a caller without it is answered 403 and the refusal is audited with who
 * asked and what they asked for. Thread-safe.
 */
final class AdminGuard {

    private final LeaseholdProperties properties;
    private final AdminAudit audit;

    AdminGuard(LeaseholdProperties properties, AdminAudit audit) {
        this.properties = properties;
        this.audit = audit;
    }

    /** The caller's name, {@code anonymous} without a principal. */
    static String who(SecurityContext security) {
        return security.getPrincipal() == null
                ? "anonymous"
                : security.getPrincipal().getName();
    }

    /**
     * {@code null} when the caller has the admin role; otherwise the 403 answer, after auditing the
     * refusal as {@code deniedType} with the fields {@code attempted} adds (what was asked for) and
     * then {@code needsRole}.
     *
     * @param action what the caller tried, for the answer ("force-release")
     */
    WebEndpointResponse<Object> refusal(
            SecurityContext security, String deniedType, String action, UnaryOperator<AuditLine> attempted) {
        String role = properties.getAdmin().getRole();
        if (security.isUserInRole(role)) {
            return null;
        }
        AuditLine line =
                attempted.apply(AdminAudit.line(deniedType, who(security))).text("needsRole", role);
        audit.record(deniedType, line);
        return new WebEndpointResponse<>(Map.of("error", action + " needs the role " + role), 403);
    }

    AdminAudit audit() {
        return audit;
    }
}
