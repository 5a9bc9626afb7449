package dev.leasehold.spring.web;

import dev.leasehold.idempotency.RequestScope;
import java.io.InputStream;
import java.io.OutputStream;
import java.io.Reader;
import java.io.Writer;
import java.lang.annotation.Annotation;
import java.lang.reflect.Method;
import java.security.Principal;
import java.util.ArrayList;
import java.util.List;
import java.util.function.BiConsumer;
import java.util.function.Function;
import org.springframework.util.ClassUtils;

/** The default scope and payload of an {@link Idempotent} call. Thread-safe. */
final class IdempotentScopes {

    /** The longest scope a request record holds. */
    static final int MAX_SCOPE = RequestScope.MAX_LENGTH;

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
        forEachPayloadArgument(method, arguments, (index, value) -> payload.add(value));
        return payload;
    }

    /**
     * The default payload as one JSON array: each payload argument as {@code write} gives it, but
     * the argument at {@code bodyIndex} as {@code bodyJson}, the request body as received.
     */
    static String payloadJson(
            Method method, Object[] arguments, int bodyIndex, String bodyJson, Function<Object, String> write) {
        StringBuilder json = new StringBuilder("[");
        forEachPayloadArgument(method, arguments, (index, value) -> {
            if (json.length() > 1) {
                json.append(',');
            }
            json.append(index == bodyIndex ? bodyJson : write.apply(value));
        });
        return json.append(']').toString();
    }

    private static void forEachPayloadArgument(Method method, Object[] arguments, BiConsumer<Integer, Object> each) {
        Class<?>[] types = method.getParameterTypes();
        Annotation[][] annotations = method.getParameterAnnotations();
        for (int i = 0; i < arguments.length; i++) {
            if (WebRequests.isHttpEntity(arguments[i])) {
                each.accept(i, WebRequests.entityBody(arguments[i]));
            } else if (!infrastructure(types[i], arguments[i], annotations[i])) {
                each.accept(i, arguments[i]);
            }
        }
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

    /** The stored form of a call's scope (see {@link RequestScope}). */
    static String scope(String base, String tenant, String principal) {
        return new RequestScope(base, tenant, principal).text();
    }
}
