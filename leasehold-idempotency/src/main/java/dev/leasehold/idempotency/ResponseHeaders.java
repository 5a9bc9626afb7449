package dev.leasehold.idempotency;

import java.util.ArrayList;
import java.util.List;

/**
 * The stored form of response headers: one {@code name:value} line per header, in order. A name is
 * an HTTP token (no colon) and a value has no CR, LF or NUL ({@link StoredResponse.Header}), so
 * the first colon of a line ends the name and the value comes back exactly, spaces included.
 */
final class ResponseHeaders {

    private ResponseHeaders() {}

    static String encode(List<StoredResponse.Header> headers) {
        if (headers.isEmpty()) {
            return null;
        }
        StringBuilder out = new StringBuilder();
        for (StoredResponse.Header header : headers) {
            out.append(header.name()).append(':').append(header.value()).append('\n');
        }
        return out.toString();
    }

    static List<StoredResponse.Header> decode(String stored) {
        if (stored == null || stored.isEmpty()) {
            return List.of();
        }
        List<StoredResponse.Header> headers = new ArrayList<>();
        int start = 0;
        while (start < stored.length()) {
            int end = stored.indexOf('\n', start);
            if (end < 0) {
                end = stored.length();
            }
            String line = stored.substring(start, end);
            int colon = line.indexOf(':');
            if (colon <= 0) {
                throw new IllegalStateException("stored response header line is malformed: " + line);
            }
            headers.add(new StoredResponse.Header(line.substring(0, colon), line.substring(colon + 1)));
            start = end + 1;
        }
        return headers;
    }
}
