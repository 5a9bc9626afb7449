package dev.leasehold.jdbc;

import static org.assertj.core.api.Assertions.assertThat;

import dev.leasehold.LockKey;
import dev.leasehold.spi.AcquireResult;
import dev.leasehold.testkit.TestServices;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.CountDownLatch;
import org.junit.jupiter.api.Test;

/** The SQL store on an embedded H2 database, the reference services' default. */
class H2LeaseStoreTest extends AbstractJdbcLeaseStoreTest {

    @Override
    protected TestServices.JdbcEndpoint endpoint() {
        return new TestServices.JdbcEndpoint("jdbc:h2:mem:leasehold-test;DB_CLOSE_DELAY=-1", "sa", "", "embedded");
    }

    /** Polled every 50 ms at most: the bound leaves room for the poll, the acquire and a loaded machine. */
    @Override
    protected java.util.Optional<java.time.Duration> handOffBound() {
        return java.util.Optional.of(java.time.Duration.ofMillis(150));
    }

    @Override
    protected Database database() {
        return Database.H2;
    }

    @Override
    protected String skewSessionTimeZone() {
        return "SET TIME ZONE '+14:00'";
    }

    @Override
    protected Optional<CommandCounter> commandCounter(boolean autoCommit) {
        return Optional.empty(); // embedded: no round trips, and no per-session statement counter
    }

    /**
     * The clock is read in every statement while other sessions' transactions end all the time: 12
     * threads on the pool's 12 connections, each acquiring and releasing keys of its own. H2 2.4.240
     * could fail such a statement with an internal NullPointerException (a read of the session table
     * racing a transaction's end), which the store reports as a store failure; none may occur.
     */
    @Test
    void statementsNeverFailWhileOtherSessionsEndTheirTransactions() throws Exception {
        int threads = 12;
        int rounds = 400;
        ConcurrentLinkedQueue<Throwable> failures = new ConcurrentLinkedQueue<>();
        CountDownLatch start = new CountDownLatch(1);
        List<Thread> workers = new ArrayList<>();
        try (JdbcLeaseStore store = (JdbcLeaseStore) createStore()) {
            for (int t = 0; t < threads; t++) {
                int thread = t;
                Thread worker = new Thread(() -> {
                    try {
                        start.await();
                        for (int i = 0; i < rounds; i++) {
                            LockKey key = LockKey.of("h2-sessions", thread + "-" + (i % 8));
                            String owner = "owner-" + thread + "-" + i;
                            if (store.tryAcquire(key, owner, Duration.ofSeconds(5)) instanceof AcquireResult.Granted) {
                                store.release(key, owner);
                            }
                        }
                    } catch (Throwable e) {
                        failures.add(e);
                    }
                });
                worker.start();
                workers.add(worker);
            }
            start.countDown();
            for (Thread worker : workers) {
                worker.join();
            }
        }
        assertThat(failures).as("statements that failed").isEmpty();
    }
}
