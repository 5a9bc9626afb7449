package dev.leasehold;

import java.security.SecureRandom;
import java.util.HexFormat;
import java.util.Objects;
import java.util.UUID;
import java.util.regex.Pattern;

/**
 * An explicit owner of leases, for code where "the current thread" is not the owner: asynchronous
 * work, a request processed across threads, or a request that must take a lease under the token it
 * already has (a retried request re-entering its own session lease).
 *
 * <p>Two owners are the same if their tokens are equal. The token is a secret of the holder: it is
 * what the store compares before it renews or releases, so {@link #toString()} shows only its first
 * characters. Immutable and thread-safe; one owner may be used from several threads.
 */
public final class LockOwner {

    private static final Pattern TOKEN = Pattern.compile("[A-Za-z0-9_.\\-]{16,128}");

    private final String token;
    private final String description;

    private LockOwner(String token, String description) {
        this.token = token;
        this.description = description;
    }

    /** A new owner with a random token (122 random bits). */
    public static LockOwner create(String description) {
        return new LockOwner(randomToken(), Objects.requireNonNullElse(description, "owner"));
    }

    /**
     * An owner with a token the caller already has, such as the lease token of a request record.
     *
     * @throws IllegalArgumentException if the token is not 16 to 128 characters of letters, digits,
     *     {@code _ . -}
     */
    public static LockOwner withToken(String token, String description) {
        if (token == null || !TOKEN.matcher(token).matches()) {
            throw new IllegalArgumentException(
                    "owner token must be 16 to 128 characters of letters, digits, '_', '.' or '-', was "
                            + (token == null ? "null" : "a string of " + token.length() + " characters"));
        }
        return new LockOwner(token, Objects.requireNonNullElse(description, "owner"));
    }

    static String randomToken() {
        UUID uuid = UUID.randomUUID();
        // HexFormat, not String.format: the same 32 hex digits at a quarter of the cost (a token is
        // drawn per grant, on the busy path too)
        HexFormat hex = HexFormat.of();
        return hex.toHexDigits(uuid.getMostSignificantBits()) + hex.toHexDigits(uuid.getLeastSignificantBits());
    }

    /**
     * A token of 128 bits from the secure random source, in 32 hex digits: the token of one grant
     * (see docs/design/engine.md), drawn on every acquire, also on the busy path.
     */
    static String grantToken() {
        byte[] bits = new byte[16];
        GRANT_TOKENS.nextBytes(bits);
        return HexFormat.of().formatHex(bits);
    }

    private static final SecureRandom GRANT_TOKENS = new SecureRandom();

    /** The first characters of a token, safe to log. */
    public static String abbreviate(String token) {
        if (token == null) {
            return "null";
        }
        return token.length() <= 8 ? token : token.substring(0, 8) + "...";
    }

    /** The token the store compares; keep it secret. */
    public String token() {
        return token;
    }

    /** What this owner is, for logs and operators. */
    public String description() {
        return description;
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof LockOwner other && token.equals(other.token);
    }

    @Override
    public int hashCode() {
        return token.hashCode();
    }

    @Override
    public String toString() {
        return "LockOwner{" + description + ", token=" + abbreviate(token) + "}";
    }
}
