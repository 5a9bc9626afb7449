package dev.leasehold.idempotency;

import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.List;
import java.util.Objects;

/**
 * The response stored with a completed request, replayed to every later submit of the same key:
 * its status, content type, headers (name/value pairs, order and duplicates kept) and the exact
 * bytes of its body. What goes in comes back byte for byte. Immutable.
 */
public final class StoredResponse {

    private static final int MAX_CONTENT_TYPE = 255;

    private final int status;
    private final String contentType;
    private final List<Header> headers;
    private final byte[] body;

    /**
     * A response with a text body (stored as UTF-8), no content type and no headers.
     *
     * @param status the HTTP status (or any code the caller uses), 100 to 599
     * @param body the response body, usually JSON; may be {@code null}
     * @throws IllegalArgumentException if the status is out of range or the body is not valid UTF-16
     */
    public StoredResponse(int status, String body) {
        this(status, null, List.of(), body == null ? null : Utf8.encode(body, "response body"));
    }

    private StoredResponse(int status, String contentType, List<Header> headers, byte[] body) {
        if (status < 100 || status > 599) {
            throw new IllegalArgumentException("status must be between 100 and 599, was " + status);
        }
        if (contentType != null) {
            if (contentType.isEmpty() || contentType.length() > MAX_CONTENT_TYPE) {
                throw new IllegalArgumentException(
                        "content type must be 1 to " + MAX_CONTENT_TYPE + " characters, was " + contentType.length());
            }
            Header.checkValue("content type", contentType);
        }
        this.status = status;
        this.contentType = contentType;
        this.headers = List.copyOf(Objects.requireNonNull(headers, "headers are missing (null)"));
        this.body = body;
    }

    /**
     * A response with everything a replay must give back.
     *
     * @param status 100 to 599
     * @param contentType the content type, or null
     * @param headers the headers to replay, in order (never null; may be empty)
     * @param body the exact body bytes, or null for none; copied
     * @throws IllegalArgumentException if a header or the content type is malformed
     */
    public static StoredResponse of(int status, String contentType, List<Header> headers, byte[] body) {
        return new StoredResponse(status, contentType, headers, body == null ? null : body.clone());
    }

    /** The status. */
    public int status() {
        return status;
    }

    /** The content type, or null if none was stored. */
    public String contentType() {
        return contentType;
    }

    /** The headers, in the order stored; immutable. */
    public List<Header> headers() {
        return headers;
    }

    /** A copy of the exact body bytes, or null. */
    public byte[] bodyBytes() {
        return body == null ? null : body.clone();
    }

    /** The body as UTF-8 text, or null. */
    public String body() {
        return body == null ? null : new String(body, StandardCharsets.UTF_8);
    }

    /** A copy with other headers. */
    public StoredResponse withHeaders(List<Header> headers) {
        return new StoredResponse(status, contentType, headers, body);
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof StoredResponse other
                && status == other.status
                && Objects.equals(contentType, other.contentType)
                && headers.equals(other.headers)
                && Arrays.equals(body, other.body);
    }

    @Override
    public int hashCode() {
        return Objects.hash(status, contentType, headers) * 31 + Arrays.hashCode(body);
    }

    @Override
    public String toString() {
        return "StoredResponse{status=" + status + ", contentType=" + contentType + ", headers=" + headers.size()
                + ", body=" + (body == null ? "none" : body.length + " bytes") + "}";
    }

    /**
     * One response header.
     *
     * @param name an HTTP field name (token characters only), 1 to 255 characters
     * @param value its value, at most 8192 characters, without CR, LF or NUL
     */
    public record Header(String name, String value) {

        private static final String TOKEN_SYMBOLS = "!#$%&'*+-.^_`|~";

        /** Checks the name and value. */
        public Header {
            if (name == null || name.isEmpty() || name.length() > 255) {
                throw new IllegalArgumentException("header name must be 1 to 255 characters, was " + name);
            }
            for (int i = 0; i < name.length(); i++) {
                char c = name.charAt(i);
                boolean token = (c >= 'a' && c <= 'z')
                        || (c >= 'A' && c <= 'Z')
                        || (c >= '0' && c <= '9')
                        || TOKEN_SYMBOLS.indexOf(c) >= 0;
                if (!token) {
                    throw new IllegalArgumentException(
                            "header name " + name + " has a character not allowed in an HTTP field name at index " + i);
                }
            }
            Objects.requireNonNull(value, "value of header " + name + " is missing (null)");
            if (value.length() > 8192) {
                throw new IllegalArgumentException("header " + name + " is longer than 8192 characters");
            }
            checkValue("header " + name, value);
        }

        static void checkValue(String what, String value) {
            for (int i = 0; i < value.length(); i++) {
                char c = value.charAt(i);
                if (c == '\r' || c == '\n' || c == 0) {
                    throw new IllegalArgumentException(what + " contains CR, LF or NUL at index " + i);
                }
            }
            Utf8.encode(value, what);
        }
    }
}
