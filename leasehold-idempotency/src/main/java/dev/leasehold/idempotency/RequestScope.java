package dev.leasehold.idempotency;

import java.util.ArrayList;
import java.util.List;
import java.util.Objects;

/**
 * The key space of a request record as a structured value: a base (what is being done), the
 * caller's tenant and the caller's principal. {@link #text()} is the form a request record stores:
 * {@code base}, then {@code |tenant:} and {@code |user:} when known, each part escaped so that it
 * ends where it says it does ({@code \} as {@code \\}, {@code |} as {@code \|}, {@code #} as
 * {@code \#}, control characters and unpaired surrogates as {@code \}{@code uXXXX}). No text in one
 * part can imitate another part, a missing part, or the shortened form below: a tenant {@code
 * acme|user:alice} with no caller is not the tenant {@code acme} with the caller {@code alice}
 * ({@code RequestScopeTest#noPartCanImitateAnother}), and a caller with a principal never shares a
 * scope with one without ({@code #aCallerWithAPrincipalNeverSharesAScopeWithOneWithout}).
 *
 * <p>A text longer than {@value #MAX_LENGTH} characters keeps a readable start, cut between two
 * characters of a part or before a part, never inside an escape or a surrogate pair, and ends with
 * an unescaped {@code #} and the SHA-256 of the whole text, so distinct scopes stay distinct
 * ({@code #aLongScopeIsShortenedWithTheHashOfTheWhole}, {@code
 * #aShortenedScopeIsNeverCutInsideAnEscapeOrASurrogatePair}, {@code
 * #noScopeCanImitateTheShortenedFormOfAnother}).
 *
 * <p>Scopes were once stored as joined text ({@code base|tenant=…|user=…}, the parts as sent), in
 * which a tenant header {@code acme|user=alice} from a guest spelled the scope of the signed-in
 * {@code alice}. A scope with a tenant or a principal never has such a text (its separators are
 * {@code |tenant:} and {@code |user:}, and every {@code |} within a part is escaped), so no record
 * stored in that form, forged or not, is found for it ({@code
 * #noScopeWithATenantOrAPrincipalHasTheTextOnceStoredForIt}); a scope with neither keeps its text.
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
