package dev.leasehold;

import java.time.Duration;
import java.util.Objects;

/**
 * How one lease is asked for: how long the store grants it ({@code leaseFor}), how long a caller
 * waits for a busy key ({@code waitFor}, zero means "never wait", the HTTP 409 style), and whether
 * the engine renews the lease while it is held (the watchdog).
 *
 * <p>Immutable and thread-safe. Built with {@link #builder()}, which rejects bad values eagerly
 * with the value in the message.
 */
public final class LeaseOptions {

    /** The shortest lease accepted: shorter ones cannot be renewed in time over a network. */
    public static final Duration MIN_LEASE = Duration.ofMillis(20);
    /** The longest lease accepted: a longer one would keep a crashed holder's key locked for too long. */
    public static final Duration MAX_LEASE = Duration.ofDays(1);
    /** The longest wait accepted. */
    public static final Duration MAX_WAIT = Duration.ofHours(1);

    private static final LeaseOptions DEFAULTS = builder().build();

    private final Duration leaseFor;
    private final Duration waitFor;
    private final boolean renewal;

    private LeaseOptions(Builder builder) {
        this.leaseFor = builder.leaseFor;
        this.waitFor = builder.waitFor;
        this.renewal = builder.renewal;
    }

    /** Lease for 30 seconds, renewed while held, without waiting. */
    public static LeaseOptions defaults() {
        return DEFAULTS;
    }

    /** A builder starting from the {@linkplain #defaults() defaults}. */
    public static Builder builder() {
        return new Builder();
    }

    /** A builder starting from these options. */
    public Builder toBuilder() {
        return new Builder().leaseFor(leaseFor).waitFor(waitFor).renewal(renewal);
    }

    /** These options with another wait time. */
    public LeaseOptions withWait(Duration waitFor) {
        return toBuilder().waitFor(waitFor).build();
    }

    /** How long the store grants the lease each time it is acquired or renewed. */
    public Duration leaseFor() {
        return leaseFor;
    }

    /** How long {@code acquire} waits for a busy key before it gives up. */
    public Duration waitFor() {
        return waitFor;
    }

    /**
     * Whether the engine renews the lease every {@code leaseFor / 3} while it is held; the first
     * renewal comes sooner when the store grants less than {@code leaseFor}.
     */
    public boolean renewal() {
        return renewal;
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof LeaseOptions other
                && leaseFor.equals(other.leaseFor)
                && waitFor.equals(other.waitFor)
                && renewal == other.renewal;
    }

    @Override
    public int hashCode() {
        return Objects.hash(leaseFor, waitFor, renewal);
    }

    @Override
    public String toString() {
        return "LeaseOptions{leaseFor=" + leaseFor + ", waitFor=" + waitFor + ", renewal=" + renewal + "}";
    }

    /** Builds {@link LeaseOptions}; each setter checks its value at once. Not thread-safe. */
    public static final class Builder {
        private Duration leaseFor = Duration.ofSeconds(30);
        private Duration waitFor = Duration.ZERO;
        private boolean renewal = true;

        private Builder() {}

        /**
         * How long the store grants the lease, between {@link #MIN_LEASE} and {@link #MAX_LEASE}.
         *
         * @throws IllegalArgumentException naming the value if it is out of range
         */
        public Builder leaseFor(Duration leaseFor) {
            Objects.requireNonNull(leaseFor, "leaseFor is missing (null)");
            if (leaseFor.compareTo(MIN_LEASE) < 0 || leaseFor.compareTo(MAX_LEASE) > 0) {
                throw new IllegalArgumentException(
                        "leaseFor must be between " + MIN_LEASE + " and " + MAX_LEASE + ", was " + leaseFor);
            }
            this.leaseFor = leaseFor;
            return this;
        }

        /**
         * How long to wait for a busy key, from zero (never wait) to {@link #MAX_WAIT}.
         *
         * @throws IllegalArgumentException naming the value if it is negative or too long
         */
        public Builder waitFor(Duration waitFor) {
            Objects.requireNonNull(waitFor, "waitFor is missing (null)");
            if (waitFor.isNegative() || waitFor.compareTo(MAX_WAIT) > 0) {
                throw new IllegalArgumentException("waitFor must be between PT0S and " + MAX_WAIT + ", was " + waitFor);
            }
            this.waitFor = waitFor;
            return this;
        }

        /** Whether to renew the lease while it is held (default {@code true}). */
        public Builder renewal(boolean renewal) {
            this.renewal = renewal;
            return this;
        }

        /** The options. */
        public LeaseOptions build() {
            return new LeaseOptions(this);
        }
    }
}
