package dev.leasehold.spring;

import dev.leasehold.idempotency.CanonicalJson;
import java.io.InputStream;
import java.io.OutputStream;
import java.io.Reader;
import java.io.Writer;
import java.lang.annotation.Annotation;
import java.lang.reflect.Method;
import java.security.Principal;
import java.util.ArrayList;
import java.util.List;
import org.springframework.util.ClassUtils;

/** The default scope and payload of an {@link Idempotent} call. Thread-safe. */
final class IdempotentScopes {

    /** The longest scope a request record holds. */
    static final int MAX_SCOPE = 128;

    private static final List<Class<?>> INFRASTRUCTURE = present(
            "jakarta.servlet.ServletRequest",
            "jakarta.servlet.ServletResponse",
            "jakarta.servlet.http.HttpSession",
            "jakarta.servlet.http.Part",
            "org.springframework.web.context.request.WebRequest",
            "org.springframework.web.bind.support.SessionStatus",
            "org.springframework.web.util.UriComponentsBuilder",
            "org.springframework.web.multipart.MultipartFile",
            "org.springframework.ui.Model",
            "org.springframework.ui.ModelMap",
            "org.springframework.validation.Errors",
            "org.springframework.http.HttpHeaders");
    private static final String AUTHENTICATION_PRINCIPAL =
            "org.springframework.security.core.annotation.AuthenticationPrincipal";

    private IdempotentScopes() {}

    private static List<Class<?>> present(String... names) {
        List<Class<?>> found = new ArrayList<>(
                List.of(Principal.class, InputStream.class, OutputStream.class, Reader.class, Writer.class));
        for (String name : names) {
            ClassLoader loader = IdempotentScopes.class.getClassLoader();
            if (ClassUtils.isPresent(name, loader)) {
                found.add(ClassUtils.resolveClassName(name, loader));
            }
        }
        return List.copyOf(found);
    }

    /** The arguments that make up the default payload: all but the web infrastructure ones. */
    static List<Object> payload(Method method, Object[] arguments) {
        List<Object> payload = new ArrayList<>(arguments.length);
        Class<?>[] types = method.getParameterTypes();
        Annotation[][] annotations = method.getParameterAnnotations();
        for (int i = 0; i < arguments.length; i++) {
            if (WebRequests.isHttpEntity(arguments[i])) {
                payload.add(WebRequests.entityBody(arguments[i]));
            } else if (!infrastructure(types[i], arguments[i], annotations[i])) {
                payload.add(arguments[i]);
            }
        }
        return payload;
    }

    private static boolean infrastructure(Class<?> type, Object argument, Annotation[] annotations) {
        for (Annotation annotation : annotations) {
            if (annotation.annotationType().getName().equals(AUTHENTICATION_PRINCIPAL)) {
                return true;
            }
        }
        for (Class<?> excluded : INFRASTRUCTURE) {
            if (excluded.isAssignableFrom(type) || excluded.isInstance(argument)) {
                return true;
            }
        }
        return false;
    }

    /**
     * The scope of a call: {@code base}, then {@code |tenant=} and {@code |user=} when known. A
     * scope longer than {@value #MAX_SCOPE} characters keeps a readable start and ends with the
     * SHA-256 of the whole, so distinct scopes stay distinct.
     */
    static String scope(String base, String tenant, String principal) {
        StringBuilder scope = new StringBuilder(base);
        if (tenant != null && !tenant.isEmpty()) {
            scope.append("|tenant=").append(tenant);
        }
        if (principal != null) {
            scope.append("|user=").append(principal);
        }
        String full = scope.toString();
        if (full.length() <= MAX_SCOPE) {
            return full;
        }
        String hash = CanonicalJson.sha256(full);
        int keep = MAX_SCOPE - hash.length() - 1;
        String start = full.substring(0, keep);
        if (Character.isHighSurrogate(start.charAt(start.length() - 1))) {
            start = start.substring(0, start.length() - 1);
        }
        return start + "#" + hash;
    }
}
