package dev.leasehold.examples.loan;

import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.time.ZoneId;
import java.util.concurrent.atomic.AtomicLong;

/** A clock the tests move forward and back by whole days, for the service's business date. */
final class TestClock extends Clock {

    private static final AtomicLong OFFSET_DAYS = new AtomicLong();
    private final ZoneId zone;

    TestClock(ZoneId zone) {
        this.zone = zone;
    }

    static void advanceDays(long days) {
        OFFSET_DAYS.addAndGet(days);
    }

    static void reset() {
        OFFSET_DAYS.set(0);
    }

    static long offsetDays() {
        return OFFSET_DAYS.get();
    }

    @Override
    public ZoneId getZone() {
        return zone;
    }

    @Override
    public Clock withZone(ZoneId zone) {
        return new TestClock(zone);
    }

    @Override
    public Instant instant() {
        return Instant.now().plus(Duration.ofDays(OFFSET_DAYS.get()));
    }
}
