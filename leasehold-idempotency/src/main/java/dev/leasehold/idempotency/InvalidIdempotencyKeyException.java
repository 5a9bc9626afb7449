package dev.leasehold.idempotency;

/**
 * An idempotency key that breaks one of the rules of {@link IdempotencyKeys#check}; the message
 * names the rule. An HTTP layer answers it with 400.
 */
public class InvalidIdempotencyKeyException extends IllegalArgumentException {
    private static final long serialVersionUID = 1L;

    /** The rule a key broke. */
    public enum Rule {
        /** The key is missing, empty or only white space. */
        MISSING,
        /** The key is longer than {@link IdempotencyKeys#MAX_LENGTH} characters. */
        TOO_LONG,
        /** The key contains a control character (or an unpaired surrogate). */
        CONTROL_CHARACTER
    }

    private final Rule rule;

    /** A key that broke {@code rule}. */
    public InvalidIdempotencyKeyException(Rule rule, String message) {
        super(message);
        this.rule = rule;
    }

    /** The rule the key broke. */
    public Rule rule() {
        return rule;
    }
}
