package dev.leasehold.spring;

import org.springframework.http.HttpStatusCode;
import org.springframework.http.ResponseEntity;
import org.springframework.util.ClassUtils;
import org.springframework.web.context.request.RequestAttributes;
import org.springframework.web.context.request.RequestContextHolder;
import org.springframework.web.context.request.ServletRequestAttributes;

/** The bits of the current HTTP exchange {@link Idempotent} needs; inert outside a web request. */
final class WebRequests {

    static final String REPLAYED_HEADER = "Idempotent-Replayed";
    private static final boolean WEB = ClassUtils.isPresent(
            "org.springframework.web.context.request.RequestContextHolder", WebRequests.class.getClassLoader());

    private WebRequests() {}

    static String header(String name) {
        if (!WEB) {
            return null;
        }
        RequestAttributes attributes = RequestContextHolder.getRequestAttributes();
        if (attributes instanceof ServletRequestAttributes servlet) {
            return servlet.getRequest().getHeader(name);
        }
        return null;
    }

    static void markReplayed() {
        if (WEB
                && RequestContextHolder.getRequestAttributes() instanceof ServletRequestAttributes servlet
                && servlet.getResponse() != null) {
            servlet.getResponse().setHeader(REPLAYED_HEADER, "true");
        }
    }

    static boolean isResponseEntity(Object value) {
        return WEB && value instanceof ResponseEntity<?>;
    }

    static boolean isResponseEntityType(Class<?> type) {
        return WEB && ResponseEntity.class.isAssignableFrom(type);
    }

    static int status(Object value) {
        return ((ResponseEntity<?>) value).getStatusCode().value();
    }

    static Object body(Object value) {
        return ((ResponseEntity<?>) value).getBody();
    }

    static Object responseEntity(int status, Object body) {
        return ResponseEntity.status(HttpStatusCode.valueOf(status))
                .header(REPLAYED_HEADER, "true")
                .body(body);
    }
}
