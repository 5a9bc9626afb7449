package dev.leasehold.spi;

import java.util.Objects;

/**
 * A release seen by a subscriber of {@link LeaseStore}: which key, which grant ended, and whether an
 * operator forced it. The grant is named by its fence, never by its owner token (tokens are secrets
 * of their holders and are not broadcast).
 *
 * @param key the rendered lock key ({@link dev.leasehold.LockKey#render()})
 * @param fence the fence of the grant that ended, or {@code 0} when the store cannot tell (the key
 *     was already free when it was force-released)
 * @param forced whether the release was a force-release rather than the owner's own release
 */
public record ReleaseNotice(String key, long fence, boolean forced) {

    /** Checks the fields. */
    public ReleaseNotice {
        Objects.requireNonNull(key, "key");
        if (fence < 0) {
            throw new IllegalArgumentException("fence must be >= 0, was " + fence);
        }
    }
}
