package dev.leasehold.idempotency;

import java.util.ArrayList;
import java.util.List;
import java.util.Objects;

/**
 * The key space of a request record as a structured value: a base (what is being done), the
 * caller's tenant and the caller's principal. {@link #text()} is the form a request record stores:
 * {@code base}, then {@code |tenant:} and {@code |user:} when known, each part escaped ({@code \},
 * {@code |} and {@code #} with a backslash, control characters and unpaired surrogates as {@code
 * \}{@code uXXXX}), so that no text in one part can imitate another part or a missing one. A text
 * longer than {@value #MAX_LENGTH} characters keeps a readable start and ends with {@code #} and
 * the SHA-256 of the whole. Why no scope can be forged: {@code docs/design/idempotency.md}.
 *
 * @param base what the key space is for (a method, a chat session); not blank
 * @param tenant the caller's tenant, or null (or empty) for none
 * @param principal the caller's authenticated name, or null for an unauthenticated caller
 */
public record RequestScope(String base, String tenant, String principal) {

    /** The longest text a request record holds as its scope. */
    public static final int MAX_LENGTH = 128;

    /** Checks the base. */
    public RequestScope {
        Objects.requireNonNull(base, "the scope's base is missing (null)");
        if (base.isBlank()) {
            throw new IllegalArgumentException("the scope's base is blank");
        }
        if (tenant != null && tenant.isEmpty()) {
            tenant = null;
        }
    }

    /** The stored form: at most {@value #MAX_LENGTH} characters, never blank, no control character. */
    public String text() {
        List<Integer> cuts = new ArrayList<>();
        StringBuilder text = new StringBuilder();
        escape(base, text, cuts);
        if (tenant != null) {
            cuts.add(text.length());
            text.append("|tenant:");
            escape(tenant, text, cuts);
        }
        if (principal != null) {
            cuts.add(text.length());
            text.append("|user:");
            escape(principal, text, cuts);
        }
        String full = text.toString();
        if (full.length() <= MAX_LENGTH) {
            return full;
        }
        String hash = CanonicalJson.sha256(full);
        int keep = MAX_LENGTH - hash.length() - 1;
        int cut = 0;
        for (int at : cuts) {
            if (at <= keep) {
                cut = at;
            }
        }
        return full.substring(0, cut) + "#" + hash;
    }

    /** Appends {@code part} escaped, noting where each of its characters (or pairs) starts. */
    private static void escape(String part, StringBuilder out, List<Integer> cuts) {
        for (int i = 0; i < part.length(); i++) {
            cuts.add(out.length());
            char c = part.charAt(i);
            if (c == '\\' || c == '|' || c == '#') {
                out.append('\\').append(c);
            } else if (Character.isHighSurrogate(c)
                    && i + 1 < part.length()
                    && Character.isLowSurrogate(part.charAt(i + 1))) {
                out.append(c).append(part.charAt(++i));
            } else if (Character.isISOControl(c) || Character.isSurrogate(c)) {
                out.append(String.format("\\u%04X", (int) c));
            } else {
                out.append(c);
            }
        }
    }

    @Override
    public String toString() {
        return text();
    }
}
