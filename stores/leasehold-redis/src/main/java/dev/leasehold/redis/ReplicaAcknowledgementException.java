package dev.leasehold.redis;

import dev.leasehold.LeaseStoreException;
import io.lettuce.core.RedisException;
import java.time.Duration;

/**
 * A grant or renewal was applied on the master but fewer replicas (or AOF fsyncs) than the store
 * requires acknowledged it in time, so a failover could forget it. A new grant has been released
 * again (best effort) before this is thrown: the caller does not hold the key. A renewal is left as
 * it is: the holder keeps its lease until it expires and the engine goes on renewing.
 */
public final class ReplicaAcknowledgementException extends LeaseStoreException {
    private static final long serialVersionUID = 1L;

    private final int required;
    private final int acknowledged;

    ReplicaAcknowledgementException(String operation, String key, String detail, int required, int acknowledged) {
        super(operation, key, new RedisException(detail));
        this.required = required;
        this.acknowledged = acknowledged;
    }

    static String detail(String what, int required, int acknowledged, Duration timeout, String outcome) {
        return acknowledged + " of " + required + " " + what + " acknowledged within " + timeout.toMillis() + " ms; "
                + outcome;
    }

    /** How many acknowledgements the store requires. */
    public int required() {
        return required;
    }

    /** How many arrived in time. */
    public int acknowledged() {
        return acknowledged;
    }
}
