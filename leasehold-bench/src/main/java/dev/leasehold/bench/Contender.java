package dev.leasehold.bench;

import java.time.Duration;

/** One lock implementation under test, behind the smallest common interface. */
interface Contender extends AutoCloseable {

    /** A held lock. */
    interface Held {
        void unlock();
    }

    String name();

    /** The backend it runs on: redis, postgresql or mariadb (ratios compare within one backend). */
    String backend();

    /** Whether this is the raw floor of its backend. */
    default boolean floor() {
        return false;
    }

    /** Whether it can wait for a busy key (ShedLock cannot). */
    default boolean waits() {
        return true;
    }

    /** Takes the key without waiting; null when busy. */
    Held tryLock(String key) throws Exception;

    /** Takes the key, waiting up to {@code wait}; null when still busy. */
    Held lock(String key, Duration wait) throws Exception;

    @Override
    void close() throws Exception;
}
