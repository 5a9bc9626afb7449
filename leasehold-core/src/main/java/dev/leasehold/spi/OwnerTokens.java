package dev.leasehold.spi;

/**
 * The rule for owner tokens that every store applies before it sends anything: present, not blank,
 * at most {@value #MAX_LENGTH} characters, no control character (U+0000 to U+001F, U+007F to
 * U+009F) and no unpaired surrogate, so that a token is stored and compared exactly as given on
 * every backend.
 */
public final class OwnerTokens {

    /** The longest owner token accepted, in characters. */
    public static final int MAX_LENGTH = 128;

    private OwnerTokens() {}

    /**
     * Returns {@code owner} if it follows the rule.
     *
     * @throws IllegalArgumentException naming what is wrong and where
     */
    public static String check(String owner) {
        if (owner == null || owner.isBlank()) {
            throw new IllegalArgumentException("owner token is missing or blank");
        }
        if (owner.length() > MAX_LENGTH) {
            throw new IllegalArgumentException(
                    "owner token must be at most " + MAX_LENGTH + " characters, was " + owner.length());
        }
        for (int i = 0; i < owner.length(); i++) {
            char c = owner.charAt(i);
            if (Character.isISOControl(c)) {
                throw new IllegalArgumentException(
                        String.format("owner token contains a control character (U+%04X) at index %d", (int) c, i));
            }
            if (Character.isHighSurrogate(c)
                    && i + 1 < owner.length()
                    && Character.isLowSurrogate(owner.charAt(i + 1))) {
                i++;
            } else if (Character.isSurrogate(c)) {
                throw new IllegalArgumentException(
                        String.format("owner token contains an unpaired surrogate (U+%04X) at index %d", (int) c, i));
            }
        }
        return owner;
    }
}
