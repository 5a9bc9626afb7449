package dev.leasehold.spring.web;

import org.springframework.util.ClassUtils;

/**
 * Who is calling: the name of the authenticated principal, from Spring Security when it is on the
 * class path and the caller is authenticated (not anonymous), else from the servlet request's user
 * principal; null for an unauthenticated or non-web caller.
 */
final class Callers {

    private static final boolean SECURITY = ClassUtils.isPresent(
            "org.springframework.security.core.context.SecurityContextHolder", Callers.class.getClassLoader());

    private Callers() {}

    static String principal() {
        if (SECURITY) {
            String name = SecurityCaller.name();
            if (name != null) {
                return name;
            }
        }
        return WebRequests.userPrincipal();
    }

    /** Spring Security's view; loaded only when Spring Security is on the class path. */
    private static final class SecurityCaller {
        private SecurityCaller() {}

        static String name() {
            org.springframework.security.core.Authentication authentication =
                    org.springframework.security.core.context.SecurityContextHolder.getContext()
                            .getAuthentication();
            if (authentication == null
                    || !authentication.isAuthenticated()
                    || authentication
                            instanceof org.springframework.security.authentication.AnonymousAuthenticationToken) {
                return null;
            }
            String name = authentication.getName();
            return name == null || name.isEmpty() ? null : name;
        }
    }
}
