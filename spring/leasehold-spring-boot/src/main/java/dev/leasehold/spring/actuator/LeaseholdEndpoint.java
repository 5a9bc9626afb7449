package dev.leasehold.spring.actuator;

import dev.leasehold.LeaseInfo;
import dev.leasehold.LockKey;
import dev.leasehold.LockOwner;
import dev.leasehold.LockService;
import dev.leasehold.spi.LeaseStore;
import dev.leasehold.spring.lock.LockModeSwitch;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.jspecify.annotations.Nullable;
import org.springframework.boot.actuate.endpoint.SecurityContext;
import org.springframework.boot.actuate.endpoint.annotation.ReadOperation;
import org.springframework.boot.actuate.endpoint.annotation.Selector;
import org.springframework.boot.actuate.endpoint.annotation.WriteOperation;
import org.springframework.boot.actuate.endpoint.web.WebEndpointResponse;
import org.springframework.boot.actuate.endpoint.web.annotation.WebEndpoint;

/**
 * Operations on leases, at {@code /actuator/leasehold}:
 *
 * <ul>
 *   <li>GET: the mode, the backend, the leases this instance holds (oldest first);
 *   <li>GET {@code /{namespace}}: the leases of a namespace in the store; {@code ?key=...} inspects one;
 *   <li>POST {@code {"key": ..., "reason": ...}}: force-releases a lease. Needs the role {@code
 *       leasehold.admin.role}; audited with the caller and the reason.
 * </ul>
 */
@WebEndpoint(id = "leasehold")
public class LeaseholdEndpoint {

    private final LockService locks;
    private final LeaseStore store;
    private final LockModeSwitch mode;
    private final AdminGuard admin;

    LeaseholdEndpoint(LockService locks, LeaseStore store, LockModeSwitch mode, AdminGuard admin) {
        this.locks = locks;
        this.store = store;
        this.mode = mode;
        this.admin = admin;
    }

    @ReadOperation
    public Map<String, Object> summary() {
        Map<String, Object> summary = new LinkedHashMap<>();
        summary.put("mode", mode.mode().name());
        summary.put("backend", store.name());
        summary.put(
                "heldHere",
                locks.heldLeases().stream()
                        .map(h -> Map.of(
                                "key", h.key().render(),
                                "owner", h.owner(),
                                "fence", h.fence(),
                                "holds", h.holdCount(),
                                "heldMs", h.heldFor().toMillis(),
                                "leaseMs", h.leaseFor().toMillis()))
                        .toList());
        return summary;
    }

    @ReadOperation
    public WebEndpointResponse<Object> leases(@Selector String namespace, @Nullable String key) {
        try {
            if (key != null) {
                return locks.inspect(LockKey.parse(key))
                        .<WebEndpointResponse<Object>>map(info -> new WebEndpointResponse<>(view(info)))
                        .orElseGet(() -> new WebEndpointResponse<>(Map.of("key", key, "held", false)));
            }
            List<Map<String, Object>> leases = store.list(namespace, 500).stream()
                    .map(LeaseholdEndpoint::view)
                    .toList();
            return new WebEndpointResponse<>(Map.of("namespace", namespace, "leases", leases));
        } catch (IllegalArgumentException e) {
            return new WebEndpointResponse<>(Map.of("error", e.getMessage()), 400);
        } catch (UnsupportedOperationException e) {
            return new WebEndpointResponse<>(Map.of("error", e.getMessage()), 501);
        }
    }

    @WriteOperation
    public WebEndpointResponse<Object> forceRelease(String key, String reason, SecurityContext security) {
        WebEndpointResponse<Object> refused =
                admin.refusal(security, AdminAudit.FORCE_RELEASE_DENIED, "force-release", line -> line.text("key", key)
                        .text("reason", reason));
        if (refused != null) {
            return refused;
        }
        if (reason == null || reason.isBlank()) {
            return new WebEndpointResponse<>(Map.of("error", "a force-release needs a reason for the audit log"), 400);
        }
        LockKey lockKey;
        try {
            lockKey = LockKey.parse(key);
        } catch (IllegalArgumentException e) {
            return new WebEndpointResponse<>(Map.of("error", e.getMessage()), 400);
        }
        String who = AdminGuard.who(security);
        boolean removed = locks.forceRelease(lockKey, reason + " (by " + who + ")");
        admin.audit()
                .record(
                        AdminAudit.FORCE_RELEASE,
                        AdminAudit.line(AdminAudit.FORCE_RELEASE, who)
                                .text("key", key)
                                .text("reason", reason)
                                .flag("removed", removed));
        return new WebEndpointResponse<>(Map.of("key", key, "removed", removed));
    }

    private static Map<String, Object> view(LeaseInfo info) {
        Map<String, Object> view = new LinkedHashMap<>();
        view.put("key", info.key().render());
        view.put("owner", LockOwner.abbreviate(info.ownerToken()));
        view.put("fence", info.fence());
        view.put("remainingMs", info.remaining().toMillis());
        view.put("expiresAt", info.expiresAt().toString());
        return view;
    }
}
