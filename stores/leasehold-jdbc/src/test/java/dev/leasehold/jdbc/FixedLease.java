package dev.leasehold.jdbc;

import dev.leasehold.Lease;
import dev.leasehold.LockKey;
import java.time.Instant;
import java.util.function.Consumer;

/** A lease as a holder sees it, made up for fenced-write tests: key, owner and fence only. */
record FixedLease(LockKey key, String ownerToken, long fence) implements Lease {

    @Override
    public int holdCount() {
        return 1;
    }

    @Override
    public Instant validUntil() {
        return Instant.MAX;
    }

    @Override
    public boolean isHeld() {
        return true;
    }

    @Override
    public void assertHeld() {}

    @Override
    public void onLost(Consumer<dev.leasehold.LeaseLostException> callback) {}

    @Override
    public void close() {}
}
