package dev.leasehold;

import java.time.Duration;
import java.time.Instant;
import java.util.Objects;

/**
 * What a store reports about a held lease: its key, owner token, fence, how long it remains valid
 * and when it expires, both by the store's clock. Immutable. {@link #toString()} abbreviates the
 * owner token, which is a secret of the holder.
 *
 * @param key the key
 * @param ownerToken the holder's token
 * @param fence the fence granted to the holder
 * @param remaining how long the lease stays valid, measured by the store
 * @param expiresAt when it expires by the store's clock
 */
public record LeaseInfo(LockKey key, String ownerToken, long fence, Duration remaining, Instant expiresAt) {

    /** Checks that every field is present. */
    public LeaseInfo {
        Objects.requireNonNull(key, "key");
        Objects.requireNonNull(ownerToken, "ownerToken");
        Objects.requireNonNull(remaining, "remaining");
        Objects.requireNonNull(expiresAt, "expiresAt");
    }

    @Override
    public String toString() {
        return "LeaseInfo{key=" + key + ", owner=" + LockOwner.abbreviate(ownerToken) + ", fence=" + fence
                + ", remaining=" + remaining + ", expiresAt=" + expiresAt + "}";
    }
}
