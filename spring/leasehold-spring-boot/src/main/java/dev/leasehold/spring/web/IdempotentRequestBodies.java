package dev.leasehold.spring.web;

import dev.leasehold.idempotency.CanonicalJson;
import dev.leasehold.spring.LeaseholdProperties;
import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.lang.reflect.Method;
import java.lang.reflect.Type;
import java.nio.ByteBuffer;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.Charset;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.HexFormat;
import java.util.Locale;
import org.springframework.core.MethodParameter;
import org.springframework.core.annotation.AnnotatedElementUtils;
import org.springframework.http.HttpHeaders;
import org.springframework.http.HttpInputMessage;
import org.springframework.http.HttpStatus;
import org.springframework.http.MediaType;
import org.springframework.http.converter.HttpMessageConverter;
import org.springframework.web.bind.annotation.ControllerAdvice;
import org.springframework.web.context.request.RequestAttributes;
import org.springframework.web.context.request.RequestContextHolder;
import org.springframework.web.server.ResponseStatusException;
import org.springframework.web.servlet.mvc.method.annotation.RequestBodyAdviceAdapter;

/**
 * Keeps the request body of an {@link Idempotent} MVC handler as received, before a message
 * converter reads it: the default payload's fingerprint is taken of those bytes, so a property the
 * handler's argument reads but never writes back out still counts. The body is read once, up to
 * {@code leasehold.idempotency.max-body-size} (a larger one is refused with 413), and the converter
 * reads the kept bytes. Thread-safe.
 */
@ControllerAdvice
final class IdempotentRequestBodies extends RequestBodyAdviceAdapter {

    /** The request attribute that holds the {@link Received} body. */
    static final String ATTRIBUTE = "dev.leasehold.spring.web.IdempotentRequestBodies.received";

    /**
     * A request body as received.
     *
     * @param parameter the index of the handler parameter it was read for
     * @param bytes the body
     * @param contentType its content type, or null
     */
    record Received(int parameter, byte[] bytes, MediaType contentType) {

        /**
         * The body as a JSON value for the fingerprint: a JSON document as its canonical text; any
         * other body (not JSON, not valid in its charset, or JSON that canonical JSON refuses, such
         * as one with a duplicate key) as an object holding the SHA-256 of its bytes.
         */
        String json() {
            if (contentType == null
                    || contentType.getSubtype().toLowerCase(Locale.ROOT).contains("json")) {
                Charset charset = contentType == null || contentType.getCharset() == null
                        ? StandardCharsets.UTF_8
                        : contentType.getCharset();
                try {
                    String text = charset.newDecoder()
                            .onMalformedInput(CodingErrorAction.REPORT)
                            .onUnmappableCharacter(CodingErrorAction.REPORT)
                            .decode(ByteBuffer.wrap(bytes))
                            .toString();
                    return CanonicalJson.canonicalize(text);
                } catch (CharacterCodingException | IllegalArgumentException e) {
                    // not a document canonical JSON can read: its exact bytes identify it
                }
            }
            try {
                return "{\"body-sha256\":\""
                        + HexFormat.of()
                                .formatHex(MessageDigest.getInstance("SHA-256").digest(bytes)) + "\"}";
            } catch (NoSuchAlgorithmException e) {
                throw new IllegalStateException("SHA-256 is required by every Java platform", e);
            }
        }
    }

    private final LeaseholdProperties properties;

    IdempotentRequestBodies(LeaseholdProperties properties) {
        this.properties = properties;
    }

    @Override
    public boolean supports(
            MethodParameter parameter, Type targetType, Class<? extends HttpMessageConverter<?>> converterType) {
        Method method = parameter.getMethod();
        if (method == null) {
            return false;
        }
        Idempotent idempotent = AnnotatedElementUtils.findMergedAnnotation(method, Idempotent.class);
        return idempotent != null && idempotent.payload().isEmpty();
    }

    @Override
    public HttpInputMessage beforeBodyRead(
            HttpInputMessage input,
            MethodParameter parameter,
            Type targetType,
            Class<? extends HttpMessageConverter<?>> converterType)
            throws IOException {
        long max = properties.getIdempotency().getMaxBodySize().toBytes();
        byte[] bytes;
        try (InputStream body = input.getBody()) {
            bytes = body.readNBytes((int) Math.min(Integer.MAX_VALUE - 8, max + 1));
        }
        if (bytes.length > max) {
            throw new ResponseStatusException(
                    HttpStatus.CONTENT_TOO_LARGE,
                    "the request body of " + parameter.getContainingClass().getSimpleName() + "."
                            + parameter.getExecutable().getName() + " is larger than"
                            + " leasehold.idempotency.max-body-size (" + max + " bytes): an @Idempotent"
                            + " handler keeps its body in memory for the fingerprint");
        }
        RequestAttributes attributes = RequestContextHolder.getRequestAttributes();
        if (attributes != null) {
            attributes.setAttribute(
                    ATTRIBUTE,
                    new Received(
                            parameter.getParameterIndex(),
                            bytes,
                            input.getHeaders().getContentType()),
                    RequestAttributes.SCOPE_REQUEST);
        }
        HttpHeaders headers = input.getHeaders();
        return new HttpInputMessage() {
            @Override
            public InputStream getBody() {
                return new ByteArrayInputStream(bytes);
            }

            @Override
            public HttpHeaders getHeaders() {
                return headers;
            }
        };
    }
}
