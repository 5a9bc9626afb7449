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

    /** Creates whatever rows the keys need before a timed pass (SQL floors); nothing by default. */
    default void prepare(java.util.Collection<String> keys) throws Exception {}

    /**
     * The Redis commands it sends outside scripts and pub/sub (the floor's {@code SET}), so the server's
     * command counts can be told apart into round trips and commands run inside scripts.
     */
    default java.util.Set<String> plainCommands() {
        return java.util.Set.of();
    }

    /**
     * The statements its own database sessions have sent so far, as the server counts them (MariaDB
     * {@code Questions} of each session), or -1 when the server cannot tell per session. Call once, at
     * the end: the asking is counted too.
     */
    default long sessionStatements() throws Exception {
        return -1;
    }

    /** Takes the key without waiting; null when busy. */
    Held tryLock(String key) throws Exception;

    /** Takes the key, waiting up to {@code wait}; null when still busy. */
    Held lock(String key, Duration wait) throws Exception;

    @Override
    void close() throws Exception;
}
