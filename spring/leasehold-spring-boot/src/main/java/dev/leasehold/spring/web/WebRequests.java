package dev.leasehold.spring.web;

import dev.leasehold.idempotency.StoredResponse;
import jakarta.servlet.http.HttpServletResponse;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.lang.reflect.Method;
import java.security.Principal;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.springframework.core.BridgeMethodResolver;
import org.springframework.http.HttpHeaders;
import org.springframework.http.HttpStatusCode;
import org.springframework.http.ResponseEntity;
import org.springframework.util.ClassUtils;
import org.springframework.web.context.request.RequestAttributes;
import org.springframework.web.context.request.RequestContextHolder;
import org.springframework.web.context.request.ServletRequestAttributes;
import org.springframework.web.method.HandlerMethod;

/** The bits of the current HTTP exchange {@link Idempotent} needs; inert outside a web request. */
final class WebRequests {

    static final String REPLAYED_HEADER = "Idempotent-Replayed";
    private static final boolean WEB = ClassUtils.isPresent(
                    "org.springframework.web.context.request.RequestContextHolder", WebRequests.class.getClassLoader())
            && ClassUtils.isPresent("jakarta.servlet.http.HttpServletRequest", WebRequests.class.getClassLoader());
    private static final boolean MVC = WEB
            && ClassUtils.isPresent(
                    "org.springframework.web.servlet.HandlerMapping", WebRequests.class.getClassLoader());

    private WebRequests() {}

    private static ServletRequestAttributes current() {
        if (!WEB) {
            return null;
        }
        RequestAttributes attributes = RequestContextHolder.getRequestAttributes();
        return attributes instanceof ServletRequestAttributes servlet ? servlet : null;
    }

    static String header(String name) {
        ServletRequestAttributes servlet = current();
        return servlet == null ? null : servlet.getRequest().getHeader(name);
    }

    /** The request body of the current request as received, if an {@link Idempotent} handler read one. */
    static IdempotentRequestBodies.Received receivedBody() {
        ServletRequestAttributes servlet = current();
        return servlet == null
                ? null
                : servlet.getRequest().getAttribute(IdempotentRequestBodies.ATTRIBUTE)
                                instanceof IdempotentRequestBodies.Received received
                        ? received
                        : null;
    }

    /** The name of the servlet request's authenticated user, or null. */
    static String userPrincipal() {
        ServletRequestAttributes servlet = current();
        if (servlet == null) {
            return null;
        }
        Principal principal = servlet.getRequest().getUserPrincipal();
        return principal == null ? null : principal.getName();
    }

    /**
     * Whether {@code method} is the Spring MVC handler of the current request: then its response is
     * written as stored, byte for byte, and replayed the same way.
     */
    static boolean isHandler(Method method) {
        ServletRequestAttributes servlet = current();
        if (!MVC || servlet == null || servlet.getResponse() == null) {
            return false;
        }
        Object handler = servlet.getRequest()
                .getAttribute(org.springframework.web.servlet.HandlerMapping.BEST_MATCHING_HANDLER_ATTRIBUTE);
        return handler instanceof HandlerMethod handlerMethod
                && BridgeMethodResolver.findBridgedMethod(handlerMethod.getMethod())
                        .equals(method);
    }

    /**
     * Gives the handler of {@code invocation} a {@link BufferedResponse} in place of the servlet
     * response, and of its output stream or writer, so that nothing it writes reaches the client
     * before its answer is stored.
     */
    static BufferedResponse buffer(org.aopalliance.intercept.MethodInvocation invocation) {
        HttpServletResponse response = current().getResponse();
        BufferedResponse buffered = new BufferedResponse(response);
        Object[] arguments = invocation.getArguments();
        Class<?>[] types = invocation.getMethod().getParameterTypes();
        for (int i = 0; i < arguments.length; i++) {
            if (arguments[i] instanceof jakarta.servlet.ServletResponse) {
                arguments[i] = buffered;
            } else if (arguments[i] instanceof jakarta.servlet.ServletOutputStream) {
                arguments[i] = buffered.getOutputStream();
            } else if (arguments[i] instanceof java.io.Writer && types[i].isAssignableFrom(java.io.PrintWriter.class)) {
                arguments[i] = buffered.getWriter();
            }
        }
        return buffered;
    }

    static boolean isResponseEntity(Object value) {
        return WEB && value instanceof ResponseEntity<?>;
    }

    static boolean isResponseEntityType(Class<?> type) {
        return WEB && ResponseEntity.class.isAssignableFrom(type);
    }

    static boolean isHttpEntity(Object value) {
        return WEB && value instanceof org.springframework.http.HttpEntity<?>;
    }

    /** The body of a request entity argument: the part of it that belongs to the payload. */
    static Object entityBody(Object value) {
        return ((org.springframework.http.HttpEntity<?>) value).getBody();
    }

    static int status(Object value) {
        return ((ResponseEntity<?>) value).getStatusCode().value();
    }

    static Object body(Object value) {
        return ((ResponseEntity<?>) value).getBody();
    }

    /** Every header of a response entity, in order. */
    static List<StoredResponse.Header> headers(Object value) {
        List<StoredResponse.Header> headers = new ArrayList<>();
        HttpHeaders entityHeaders = ((ResponseEntity<?>) value).getHeaders();
        for (Map.Entry<String, List<String>> header : entityHeaders.headerSet()) {
            for (String v : header.getValue()) {
                headers.add(new StoredResponse.Header(header.getKey(), v));
            }
        }
        return headers;
    }

    /** The values the handler set on the servlet response itself for {@code name}. */
    static List<String> responseHeaders(String name) {
        ServletRequestAttributes servlet = current();
        if (servlet == null || servlet.getResponse() == null) {
            return List.of();
        }
        return new ArrayList<>(servlet.getResponse().getHeaders(name));
    }

    /** A response entity with the stored status and headers around {@code body}, marked as replayed. */
    static Object responseEntity(StoredResponse response, Object body) {
        ResponseEntity.BodyBuilder builder = ResponseEntity.status(HttpStatusCode.valueOf(response.status()));
        for (StoredResponse.Header header : response.headers()) {
            builder.header(header.name(), header.value());
        }
        return builder.header(REPLAYED_HEADER, "true").body(body);
    }

    /**
     * Writes a response to the current servlet response and commits it, so nothing after it can
     * change a byte: the first answer and every replay are the same bytes.
     *
     * @param headers the headers to send (on a first answer all of the method's, on a replay the
     *     stored ones)
     */
    static void write(StoredResponse response, List<StoredResponse.Header> headers, boolean replayed) {
        HttpServletResponse out = current().getResponse();
        try {
            out.setStatus(response.status());
            for (StoredResponse.Header header : headers) {
                if (!header.name().equalsIgnoreCase(HttpHeaders.CONTENT_TYPE)
                        && !header.name().equalsIgnoreCase(HttpHeaders.CONTENT_LENGTH)) {
                    out.addHeader(header.name(), header.value());
                }
            }
            if (replayed) {
                out.setHeader(REPLAYED_HEADER, "true");
            }
            byte[] body = response.bodyBytes();
            if (response.contentType() != null) {
                out.setContentType(response.contentType());
            }
            if (body != null) {
                out.setContentLength(body.length);
                out.getOutputStream().write(body);
            }
            out.flushBuffer();
        } catch (IOException e) {
            throw new UncheckedIOException("cannot write the response to the client", e);
        }
    }
}
