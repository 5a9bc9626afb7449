package dev.leasehold.idempotency;

/**
 * The one place where idempotency keys are checked: non-empty (not only white space), at most
 * {@value #MAX_LENGTH} characters, no control character and no unpaired surrogate. {@link
 * RequestRecords#begin} applies it; an HTTP layer may call it first to answer 400. Keys are compared
 * byte for byte on every database: on MariaDB the key columns use the NO PAD collation {@code
 * utf8mb4_nopad_bin}, so {@code "K1"} and {@code "K1 "} are two keys.
 */
public final class IdempotencyKeys {

    /** The longest key accepted, in UTF-16 characters (the column holds 255). */
    public static final int MAX_LENGTH = 255;

    private IdempotencyKeys() {}

    /**
     * Returns {@code key} if it keeps the rules.
     *
     * @throws InvalidIdempotencyKeyException naming the rule it breaks
     */
    public static String check(String key) {
        if (key == null || key.isBlank()) {
            throw new InvalidIdempotencyKeyException(
                    InvalidIdempotencyKeyException.Rule.MISSING, "idempotency key is missing or blank");
        }
        if (key.length() > MAX_LENGTH) {
            throw new InvalidIdempotencyKeyException(
                    InvalidIdempotencyKeyException.Rule.TOO_LONG,
                    "idempotency key must be at most " + MAX_LENGTH + " characters, was " + key.length());
        }
        for (int i = 0; i < key.length(); i++) {
            char c = key.charAt(i);
            if (Character.isISOControl(c)) {
                throw new InvalidIdempotencyKeyException(
                        InvalidIdempotencyKeyException.Rule.CONTROL_CHARACTER,
                        "idempotency key must not contain control characters; found U+" + String.format("%04X", (int) c)
                                + " at index " + i);
            }
        }
        try {
            Utf8.encode(key, "idempotency key");
        } catch (IllegalArgumentException e) {
            throw new InvalidIdempotencyKeyException(
                    InvalidIdempotencyKeyException.Rule.CONTROL_CHARACTER, e.getMessage());
        }
        return key;
    }
}
