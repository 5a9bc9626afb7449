package dev.leasehold.spring.web;

import dev.leasehold.idempotency.StoredResponse;
import dev.leasehold.spring.internal.AnnotatedMethods;
import dev.leasehold.spring.internal.LeaseholdJson;
import java.lang.reflect.Method;
import java.lang.reflect.ParameterizedType;
import java.lang.reflect.Type;
import java.nio.charset.Charset;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Set;
import java.util.stream.Collectors;
import org.springframework.core.annotation.AnnotatedElementUtils;
import org.springframework.util.ClassUtils;

/**
 * What an {@link Idempotent} method's answer is stored as, and how a stored answer is given back.
 * Thread-safe.
 */
final class IdempotentResponses {

    static final String JSON = "application/json";
    static final String PROBLEM_JSON = "application/problem+json";
    private static final String TEXT = "text/plain;charset=UTF-8";
    private static final String BYTES = "application/octet-stream";
    private static final boolean WEB_ANNOTATIONS = ClassUtils.isPresent(
            "org.springframework.web.bind.annotation.ResponseStatus", IdempotentResponses.class.getClassLoader());

    private final LeaseholdJson json;
    private final Set<String> replayHeaders;

    IdempotentResponses(LeaseholdJson json, List<String> replayHeaders) {
        this.json = json;
        this.replayHeaders = replayHeaders.stream()
                .map(h -> h.trim().toLowerCase(Locale.ROOT))
                .filter(h -> !h.equals("set-cookie") && !h.equals("set-cookie2"))
                .collect(Collectors.toUnmodifiableSet());
    }

    /**
     * A method's answer.
     *
     * @param stored what is stored and replayed
     * @param sent the headers of the first answer: all of the method's own
     */
    record Captured(StoredResponse stored, List<StoredResponse.Header> sent) {}

    /**
     * The answer of a method that returned {@code value}.
     *
     * @param handler whether the method is the request's MVC handler: then its body is written as
     *     MVC would write it (text as text, bytes as bytes, the rest as JSON)
     * @throws ResponseNotStorableException if the answer cannot be written
     */
    Captured capture(Object value, Method method, boolean handler, BufferedResponse written) {
        String where = method.getDeclaringClass().getSimpleName() + "." + method.getName();
        int status = 200;
        List<StoredResponse.Header> headers = List.of();
        Object body = value;
        if (WebRequests.isResponseEntity(value)) {
            status = WebRequests.status(value);
            headers = WebRequests.headers(value);
            body = WebRequests.body(value);
        } else if (handler && written != null) {
            status = WEB_ANNOTATIONS ? declaredStatus(method, written.getStatus()) : written.getStatus();
        }
        if (body != null) {
            String reason = notStorable(body.getClass());
            if (reason != null) {
                throw new ResponseNotStorableException(
                        "the response of " + where + " is a " + body.getClass().getSimpleName() + ", which " + reason,
                        null);
            }
        }
        String contentType = null;
        for (StoredResponse.Header header : headers) {
            if (header.name().equalsIgnoreCase("Content-Type")) {
                contentType = header.value();
            }
        }
        byte[] bytes;
        byte[] own = written == null ? null : written.body();
        if (written != null && written.error() != null) {
            throw new ResponseNotStorableException(
                    "the response of " + where + " is sent with sendError(" + written.error() + "), whose error page"
                            + " is rendered after the method returns; throw an exception or return a ResponseEntity",
                    null);
        }
        try {
            if (own != null) {
                if (body != null) {
                    throw new ResponseNotStorableException(
                            "the response of " + where + " is written to the servlet response and returned as well;"
                                    + " do one or the other",
                            null);
                }
                bytes = own;
                contentType = written.getContentType();
            } else if (body == null) {
                bytes = null;
            } else if (handler && body instanceof byte[] raw) {
                bytes = raw;
                contentType = contentType != null ? contentType : BYTES;
            } else if (handler && body instanceof CharSequence text) {
                // As MVC writes a String: the text itself, whatever its content type says.
                bytes = text.toString().getBytes(charset(contentType));
                contentType = contentType != null ? contentType : TEXT;
            } else {
                bytes = json.write(body);
                contentType = contentType != null ? contentType : isProblem(body) ? PROBLEM_JSON : JSON;
            }
        } catch (LeaseholdJson.JsonFailure e) {
            throw new ResponseNotStorableException(
                    "the response of " + where + " cannot be stored: " + e.getMessage() + " (with " + json.describe()
                            + ")",
                    e);
        }
        List<StoredResponse.Header> replayed = new ArrayList<>();
        for (StoredResponse.Header header : headers) {
            if (replayHeaders.contains(header.name().toLowerCase(Locale.ROOT))) {
                replayed.add(header);
            }
        }
        if (handler) {
            for (String name : replayHeaders) {
                boolean fromEntity = replayed.stream().anyMatch(h -> h.name().equalsIgnoreCase(name));
                if (!fromEntity) {
                    for (String v : WebRequests.responseHeaders(name)) {
                        replayed.add(new StoredResponse.Header(canonical(name), v));
                    }
                }
            }
        }
        try {
            return new Captured(StoredResponse.of(status, contentType, replayed, bytes), headers);
        } catch (IllegalArgumentException e) {
            throw new ResponseNotStorableException(
                    "the response of " + method.getName() + " cannot be stored: " + e.getMessage(), e);
        }
    }

    /** A stored answer as the method's return value (for a method that is not the MVC handler). */
    Object value(StoredResponse response, Method method) {
        Class<?> returnType = method.getReturnType();
        if (returnType == void.class) {
            return null;
        }
        byte[] body = response.bodyBytes();
        if (WebRequests.isResponseEntityType(returnType)) {
            Type generic = method.getGenericReturnType();
            Type bodyType = generic instanceof ParameterizedType p ? p.getActualTypeArguments()[0] : Object.class;
            return WebRequests.responseEntity(response, body == null ? null : json.read(body, bodyType));
        }
        return body == null ? null : json.read(body, method.getGenericReturnType());
    }

    private static int declaredStatus(Method method, int fallback) {
        org.springframework.web.bind.annotation.ResponseStatus declared = AnnotatedElementUtils.findMergedAnnotation(
                method, org.springframework.web.bind.annotation.ResponseStatus.class);
        if (declared == null) {
            declared = AnnotatedElementUtils.findMergedAnnotation(
                    method.getDeclaringClass(), org.springframework.web.bind.annotation.ResponseStatus.class);
        }
        return declared == null ? fallback : declared.code().value();
    }

    /** The charset a text answer is written in: its content type's, else UTF-8 (as Boot's MVC writes text). */
    private static Charset charset(String contentType) {
        if (contentType != null) {
            try {
                Charset declared = org.springframework.http.MediaType.parseMediaType(contentType)
                        .getCharset();
                if (declared != null) {
                    return declared;
                }
            } catch (IllegalArgumentException e) {
                // a malformed content type is refused when the answer is stored
            }
        }
        return StandardCharsets.UTF_8;
    }

    /**
     * Why an answer of {@code type} cannot be stored exactly, or null if it can: a body written
     * after the method returns (a stream, an emitter, a deferred or asynchronous result), a resource
     * (MVC serves ranges and types of its own) or a view.
     */
    static String notStorable(Class<?> type) {
        if (AnnotatedMethods.isAsync(type)) {
            return "finishes after the method returns";
        }
        for (String name : AFTER_RETURN) {
            if (isA(type, name)) {
                return "is written after the method returns";
            }
        }
        for (String name : NOT_A_DOCUMENT) {
            if (isA(type, name)) {
                return "MVC writes in a way of its own (ranges, content types or a view)";
            }
        }
        return null;
    }

    private static final List<String> AFTER_RETURN = List.of(
            "org.springframework.web.servlet.mvc.method.annotation.StreamingResponseBody",
            "org.springframework.web.servlet.mvc.method.annotation.ResponseBodyEmitter",
            "org.springframework.web.context.request.async.DeferredResult",
            "org.springframework.web.context.request.async.WebAsyncTask",
            "java.util.concurrent.Callable",
            "java.io.InputStream");
    private static final List<String> NOT_A_DOCUMENT = List.of(
            "org.springframework.core.io.Resource",
            "org.springframework.core.io.support.ResourceRegion",
            "org.springframework.web.servlet.ModelAndView",
            "org.springframework.web.servlet.View");

    private static boolean isA(Class<?> type, String name) {
        for (Class<?> c = type; c != null; c = c.getSuperclass()) {
            if (c.getName().equals(name)) {
                return true;
            }
            for (Class<?> implemented : c.getInterfaces()) {
                if (isA(implemented, name)) {
                    return true;
                }
            }
        }
        return false;
    }

    private static boolean isProblem(Object body) {
        return body.getClass().getName().equals("org.springframework.http.ProblemDetail");
    }

    private static String canonical(String lowerCase) {
        StringBuilder name = new StringBuilder(lowerCase.length());
        boolean upper = true;
        for (char c : lowerCase.toCharArray()) {
            name.append(upper ? Character.toUpperCase(c) : c);
            upper = c == '-';
        }
        return name.toString();
    }
}
