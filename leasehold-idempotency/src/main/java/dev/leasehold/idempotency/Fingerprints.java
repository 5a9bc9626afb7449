package dev.leasehold.idempotency;

import java.util.regex.Pattern;

/** The fingerprint of a request's payload: its form, and when a stored one matches a given one. */
final class Fingerprints {

    private static final Pattern FINGERPRINT = Pattern.compile("(v1:)?[0-9a-f]{64}");

    private Fingerprints() {}

    /**
     * Checks the form: {@code v1:} and 64 lower-case hex characters ({@link CanonicalJson#fingerprint}),
     * or 64 lower-case hex characters (a digest the caller makes itself, compared as given).
     */
    static void check(String fingerprint) {
        if (fingerprint == null || !FINGERPRINT.matcher(fingerprint).matches()) {
            throw new IllegalArgumentException(
                    "fingerprint must be 'v1:' and 64 lower-case hex characters (CanonicalJson.fingerprint),"
                            + " or 64 lower-case hex characters, was "
                            + fingerprint);
        }
    }

    /** Equal, or a record stored before fingerprints had a version: its hash is the v1 hash. */
    static boolean same(String stored, String given) {
        return stored.equals(given) || ("v1:" + stored).equals(given);
    }
}
