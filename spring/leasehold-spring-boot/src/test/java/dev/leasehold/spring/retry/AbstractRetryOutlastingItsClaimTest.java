package dev.leasehold.spring.retry;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.leasehold.Lease;
import dev.leasehold.LeaseOptions;
import dev.leasehold.LockKey;
import dev.leasehold.LockOwner;
import dev.leasehold.LockService;
import dev.leasehold.idempotency.RequestRecords;
import dev.leasehold.spring.LeaseholdAutoConfigurations;
import dev.leasehold.spring.lock.Locked;
import dev.leasehold.spring.schema.TestDatabases;
import java.sql.Connection;
import java.sql.SQLException;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import javax.sql.DataSource;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.springframework.amqp.rabbit.connection.CachingConnectionFactory;
import org.springframework.amqp.rabbit.connection.ConnectionFactory;
import org.springframework.amqp.rabbit.core.RabbitAdmin;
import org.springframework.beans.factory.DisposableBean;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.autoconfigure.aop.AopAutoConfiguration;
import org.springframework.boot.jdbc.DataSourceBuilder;
import org.springframework.boot.jdbc.autoconfigure.DataSourceAutoConfiguration;
import org.springframework.boot.jdbc.autoconfigure.DataSourceTransactionManagerAutoConfiguration;
import org.springframework.boot.test.context.assertj.AssertableApplicationContext;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.boot.transaction.autoconfigure.TransactionAutoConfiguration;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.core.env.Environment;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.jdbc.datasource.DelegatingDataSource;
import org.springframework.transaction.annotation.Transactional;
import org.springframework.transaction.support.TransactionSynchronization;
import org.springframework.transaction.support.TransactionSynchronizationManager;

/**
 * A delayed retry whose job runs longer than the request records' stale threshold (2 s) and the
 * queue's claim timeout (1 s), with two instances on one database of the subclass (and one
 * broker): the running retry keeps its claim and its delivery alive, so the job runs once and
 * commits once, and the ledger and the queue end settled (SUCCESS, nothing waiting). A run that
 * loses its claims while it runs (its instance cannot reach the database) is taken over by the
 * other instance, and its own commit is refused: the job's effect exists once, the other
 * instance's.
 */
abstract class AbstractRetryOutlastingItsClaimTest {

    /** A fresh database for one test, on the engine of the subclass. */
    abstract TestDatabases database();

    private TestDatabases database;

    static final Duration JOB_TIME = Duration.ofSeconds(6);

    /** Every call of the job, by instance, across both contexts. */
    static final List<String> CALLS = new CopyOnWriteArrayList<>();

    static volatile CountDownLatch entered = new CountDownLatch(1);

    /** How each call of the job by instance ended: {@code "A committed"}, {@code "B rolled back"}. */
    static final List<String> OUTCOMES = new CopyOnWriteArrayList<>();

    /** What the first call of the job does besides its slow work. */
    enum FirstCall {
        /** Nothing: it is slow, like every call. */
        SLOW,
        /** It makes instance A's request records unreachable for longer than their stale threshold. */
        LOSES_ITS_HEARTBEATS,
        /**
         * Its instance cannot reach the database for new connections (its own transaction keeps its
         * connection) until the other instance's run of the task has begun; it then returns and
         * tries to commit while that run is still going, which waits until the first one ended.
         */
        IS_TAKEN_OVER
    }

    static volatile FirstCall firstCall = FirstCall.SLOW;

    /** Per instance: while set, its DataSource refuses new connections (its open ones keep working). */
    static final Map<String, AtomicBoolean> UNPLUGGED = new ConcurrentHashMap<>();

    static AtomicBoolean unplugged(String instance) {
        return UNPLUGGED.computeIfAbsent(instance, name -> new AtomicBoolean());
    }

    /** A slow background job: one row per committed run. */
    public static class SlowJob {
        private final JdbcTemplate jdbc;
        private final String instance;

        public SlowJob(DataSource dataSource, Environment environment) {
            this.jdbc = new JdbcTemplate(dataSource);
            this.instance = environment.getProperty("test.instance");
        }

        @Locked(namespace = "slow", key = "#id", onBusy = Locked.OnBusy.RETRY_LATER, retryKey = "#id")
        @Transactional
        public void run(String id) throws InterruptedException {
            boolean first = CALLS.isEmpty();
            CALLS.add(instance);
            jdbc.update("INSERT INTO slow_effect (id, instance) VALUES (?, ?)", id, instance);
            TransactionSynchronizationManager.registerSynchronization(new TransactionSynchronization() {
                @Override
                public void afterCompletion(int status) {
                    OUTCOMES.add(instance + (status == STATUS_COMMITTED ? " committed" : " rolled back"));
                }
            });
            entered.countDown();
            if (firstCall == FirstCall.IS_TAKEN_OVER) {
                if (first) {
                    // Its request record, queue row and lease are no longer renewed: the other
                    // instance takes the task over and begins to run it.
                    unplugged(instance).set(true);
                    await().atMost(Duration.ofSeconds(60)).until(() -> CALLS.size() == 2);
                    unplugged(instance).set(false);
                } else {
                    // The run that was taken over tries to commit while this one is still going.
                    await().atMost(Duration.ofSeconds(60)).until(() -> !OUTCOMES.isEmpty());
                }
                return;
            }
            if (first && firstCall == FirstCall.LOSES_ITS_HEARTBEATS) {
                RECORDS_DOWN.set(true);
                Thread.sleep(4000); // longer than stale-after (2 s) without one renewal
                RECORDS_DOWN.set(false);
                return;
            }
            Thread.sleep(JOB_TIME.toMillis()); // the job is slow: this is what is under test
        }
    }

    /** While set, the request records of instance A cannot reach the database: its heartbeats fail. */
    static final AtomicBoolean RECORDS_DOWN = new AtomicBoolean();

    /** Instance A's request records, on a DataSource that fails while {@link #RECORDS_DOWN} is set. */
    @Configuration(proxyBeanMethods = false)
    static class FlakyRecords {
        @Bean
        RequestRecords requestRecords(DataSource dataSource) {
            DataSource flaky = new DelegatingDataSource(dataSource) {
                @Override
                public Connection getConnection() throws SQLException {
                    if (RECORDS_DOWN.get()) {
                        throw new SQLException("records unreachable (test)", "08001");
                    }
                    return super.getConnection();
                }
            };
            return RequestRecords.builder(flaky)
                    .staleAfter(Duration.ofSeconds(2))
                    .build();
        }
    }

    /** An instance's DataSource: a pool on the test's database that can be unplugged. */
    static final class Unpluggable extends DelegatingDataSource implements DisposableBean {
        private final AtomicBoolean unplugged;

        Unpluggable(DataSource pool, AtomicBoolean unplugged) {
            super(pool);
            this.unplugged = unplugged;
        }

        @Override
        public Connection getConnection() throws SQLException {
            if (unplugged.get()) {
                throw new SQLException("the database is unreachable from this instance (test)", "08001");
            }
            return super.getConnection();
        }

        @Override
        public void destroy() throws Exception {
            if (getTargetDataSource() instanceof AutoCloseable pool) {
                pool.close();
            }
        }
    }

    @BeforeEach
    void reset() {
        CALLS.clear();
        OUTCOMES.clear();
        RECORDS_DOWN.set(false);
        UNPLUGGED.clear();
        firstCall = FirstCall.SLOW;
        entered = new CountDownLatch(1);
        database = database();
    }

    @AfterEach
    void dropDatabase() {
        database.close();
    }

    private ApplicationContextRunner instance(String name) {
        TestDatabases db = database;
        return new ApplicationContextRunner()
                .withConfiguration(AutoConfigurations.of(LeaseholdAutoConfigurations.with(
                        DataSourceAutoConfiguration.class,
                        DataSourceTransactionManagerAutoConfiguration.class,
                        TransactionAutoConfiguration.class,
                        AopAutoConfiguration.class)))
                .withPropertyValues(
                        "test.instance=" + name,
                        "leasehold.jdbc.initialize-schema=always",
                        "leasehold.stale-scan.enabled=false",
                        "leasehold.idempotency.stale-after=2s",
                        "leasehold.retry.claim-timeout=1s",
                        "leasehold.retry.poll-interval=100ms",
                        "leasehold.retry.initial-delay=100ms",
                        "leasehold.retry.max-delay=400ms",
                        "leasehold.retry.max-attempts=1000",
                        "leasehold.lock.lease-time=3s")
                .withBean(
                        "dataSource",
                        DataSource.class,
                        () -> new Unpluggable(
                                DataSourceBuilder.create()
                                        .url(db.url())
                                        .username(db.user())
                                        .password(db.password())
                                        .build(),
                                unplugged(name)))
                .withBean(SlowJob.class);
    }

    /** Makes the job busy, calls it on {@code a} so that it is stored for a retry, then frees the key. */
    private static void storeARetry(AssertableApplicationContext a, String id) {
        JdbcTemplate jdbc = direct(a);
        jdbc.execute("CREATE TABLE slow_effect (id VARCHAR(64) NOT NULL, instance VARCHAR(8) NOT NULL)");
        LockService locks = a.getBean(LockService.class);
        try (Lease held = locks.tryAcquire(LockKey.of("slow", id), LeaseOptions.defaults(), LockOwner.create("other"))
                .orElseThrow()) {
            assertThat(held.isHeld()).isTrue();
            try {
                a.getBean(SlowJob.class).run(id); // busy: stored, returns at once
            } catch (InterruptedException e) {
                throw new IllegalStateException(e);
            }
            assertThat(CALLS).as("nothing ran while the key was busy").isEmpty();
        }
    }

    /** The test's own view of the database: never unplugged. */
    private static JdbcTemplate direct(AssertableApplicationContext context) {
        return new JdbcTemplate(((Unpluggable) context.getBean(DataSource.class)).getTargetDataSource());
    }

    private static int effects(JdbcTemplate jdbc) {
        return jdbc.queryForObject("SELECT COUNT(*) FROM slow_effect", Integer.class);
    }

    private static String state(JdbcTemplate jdbc) {
        return "ledger=" + ledger(jdbc) + " queued="
                + jdbc.queryForObject("SELECT COUNT(*) FROM leasehold_retry", Integer.class) + " effects="
                + effects(jdbc);
    }

    private static String ledger(JdbcTemplate jdbc) {
        List<String> states =
                jdbc.queryForList("SELECT status FROM leasehold_request WHERE scope = 'leasehold:retry'", String.class);
        return String.join(",", states);
    }

    @Test
    void onTheDatabaseQueueARetryLongerThanItsClaimRunsOnceOnTwoInstances() {
        instance("A").run(a -> instance("B").run(b -> {
            assertThat(a).hasNotFailed().hasSingleBean(JdbcRetryQueue.class);
            assertThat(b).hasNotFailed().hasSingleBean(JdbcRetryQueue.class);
            JdbcTemplate jdbc = direct(a);
            storeARetry(a, "k1");

            assertThat(entered.await(30, TimeUnit.SECONDS))
                    .as("one instance runs the job")
                    .isTrue();
            // The same retry key is stored again while it runs (its key is busy: the run holds it).
            b.getBean(SlowJob.class).run("k1");
            assertThat(jdbc.queryForObject("SELECT status FROM leasehold_retry", String.class))
                    .as("the running row is left to its run")
                    .isEqualTo("RUNNING");
            await().atMost(Duration.ofSeconds(40)).untilAsserted(() -> assertThat(state(jdbc))
                    .as("calls " + CALLS)
                    .isEqualTo("ledger=SUCCESS queued=0 effects=1"));
            // Long enough for any second delivery (poll 100 ms, claim timeout 1 s) to have run.
            await().during(Duration.ofSeconds(3)).atMost(Duration.ofSeconds(10)).until(() -> CALLS.size() == 1);

            assertThat(CALLS).as("the job was called once, on one instance").hasSize(1);
            assertThat(jdbc.queryForObject("SELECT COUNT(*) FROM slow_effect", Integer.class))
                    .as("the job's effect committed once")
                    .isEqualTo(1);
            assertThat(ledger(jdbc)).as("the ledger says done").isEqualTo("SUCCESS");
            assertThat(jdbc.queryForObject("SELECT COUNT(*) FROM leasehold_retry", Integer.class))
                    .as("nothing left in the queue")
                    .isZero();
        }));
    }

    @Test
    void aRunWhoseHeartbeatsFailUntilItsClaimExpiresRollsBackAndTheTaskCommitsOnce() {
        firstCall = FirstCall.LOSES_ITS_HEARTBEATS;
        ApplicationContextRunner a = instance("A").withUserConfiguration(FlakyRecords.class);
        a.run(context -> {
            assertThat(context).hasNotFailed();
            JdbcTemplate jdbc = direct(context);
            storeARetry(context, "k3");
            assertThat(entered.await(30, TimeUnit.SECONDS)).isTrue();

            await().atMost(Duration.ofSeconds(40)).untilAsserted(() -> assertThat(state(jdbc))
                    .as("calls " + CALLS)
                    .isEqualTo("ledger=SUCCESS queued=0 effects=1"));
            assertThat(CALLS)
                    .as("the run that lost its claim was rolled back and the task ran again")
                    .hasSize(2);
            assertThat(jdbc.queryForObject("SELECT COUNT(*) FROM slow_effect", Integer.class))
                    .as("one effect committed")
                    .isEqualTo(1);
        });
    }

    @Test
    void aRunTakenOverByTheOtherInstanceWhileItRunsCannotCommitAndTheTaskCommitsOnce() {
        firstCall = FirstCall.IS_TAKEN_OVER;
        instance("A").run(a -> instance("B").run(b -> {
            assertThat(a).hasNotFailed();
            assertThat(b).hasNotFailed();
            JdbcTemplate jdbc = direct(a);
            storeARetry(a, "k4");
            assertThat(entered.await(30, TimeUnit.SECONDS))
                    .as("one instance runs the job")
                    .isTrue();
            String first = CALLS.get(0);
            String other = first.equals("A") ? "B" : "A";

            await().atMost(Duration.ofSeconds(60)).untilAsserted(() -> assertThat(state(jdbc))
                    .as("calls " + CALLS + ", outcomes " + OUTCOMES)
                    .isEqualTo("ledger=SUCCESS queued=0 effects=1"));
            // Long enough for any further delivery (poll 100 ms, claim timeout 1 s) to have run.
            await().during(Duration.ofSeconds(3)).atMost(Duration.ofSeconds(10)).until(() -> CALLS.size() == 2);

            assertThat(CALLS)
                    .as("the other instance took the task over while the first run was still going")
                    .containsExactly(first, other);
            assertThat(OUTCOMES)
                    .as("the run that was taken over tried to commit first, and was rolled back")
                    .containsExactly(first + " rolled back", other + " committed");
            assertThat(jdbc.queryForList("SELECT instance FROM slow_effect", String.class))
                    .as("the job's effect exists once: the run that took over")
                    .containsExactly(other);
            assertThat(ledger(jdbc)).as("the ledger says done").isEqualTo("SUCCESS");
            assertThat(jdbc.queryForObject("SELECT COUNT(*) FROM leasehold_retry", Integer.class))
                    .as("nothing left in the queue to run again")
                    .isZero();
        }));
    }

    @Test
    void onRabbitARedeliveryWhileTheFirstRunIsStillGoingDoesNotRunTheJobAgain() {
        CachingConnectionFactory factoryA = TestRabbit.confirming();
        CachingConnectionFactory factoryB = TestRabbit.confirming();
        String prefix = "leasehold-test.outlast." + UUID.randomUUID();
        try {
            instance("A")
                    .withPropertyValues("leasehold.retry.queue=rabbit", "leasehold.retry.rabbit-queue-prefix=" + prefix)
                    .withBean(ConnectionFactory.class, () -> factoryA)
                    .run(a -> instance("B")
                            .withPropertyValues(
                                    "leasehold.retry.queue=rabbit", "leasehold.retry.rabbit-queue-prefix=" + prefix)
                            .withBean(ConnectionFactory.class, () -> factoryB)
                            .run(b -> {
                                assertThat(a).hasNotFailed().hasSingleBean(RabbitRetryQueue.class);
                                assertThat(b).hasNotFailed().hasSingleBean(RabbitRetryQueue.class);
                                JdbcTemplate jdbc = direct(a);
                                storeARetry(a, "k2");

                                assertThat(entered.await(30, TimeUnit.SECONDS))
                                        .as("one instance runs the job")
                                        .isTrue();
                                // The running instance loses its broker connection: the broker
                                // delivers the unacknowledged task to the other one meanwhile.
                                (CALLS.get(0).equals("A") ? factoryA : factoryB).resetConnection();

                                await().atMost(Duration.ofSeconds(40))
                                        .untilAsserted(() -> assertThat(ledger(jdbc) + " effects=" + effects(jdbc))
                                                .as("calls " + CALLS)
                                                .isEqualTo("SUCCESS effects=1"));
                                RabbitAdmin admin = new RabbitAdmin(factoryB);
                                await().atMost(Duration.ofSeconds(20))
                                        .until(() -> admin.getQueueInfo(prefix + ".due")
                                                        .getMessageCount()
                                                == 0);
                                await().during(Duration.ofSeconds(3))
                                        .atMost(Duration.ofSeconds(10))
                                        .until(() -> CALLS.size() == 1);

                                assertThat(CALLS).as("the job was called once").hasSize(1);
                                assertThat(jdbc.queryForObject("SELECT COUNT(*) FROM slow_effect", Integer.class))
                                        .as("the job's effect committed once")
                                        .isEqualTo(1);
                                assertThat(ledger(jdbc)).isEqualTo("SUCCESS");
                                assertThat(admin.getQueueInfo(prefix + ".parked"))
                                        .as("nothing parked")
                                        .isNull();
                            }));
        } finally {
            CachingConnectionFactory cleanup = TestRabbit.confirming();
            RabbitAdmin admin = new RabbitAdmin(cleanup);
            for (long ms = 128; ms <= 8192; ms <<= 1) {
                admin.deleteQueue(prefix + ".delay." + ms);
            }
            admin.deleteQueue(prefix + ".due");
            admin.deleteQueue(prefix + ".parked");
            cleanup.destroy();
        }
    }
}
