package dev.leasehold.spring.retry;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.leasehold.Lease;
import dev.leasehold.LeaseOptions;
import dev.leasehold.LockKey;
import dev.leasehold.LockOwner;
import dev.leasehold.LockService;
import dev.leasehold.idempotency.RequestRecords;
import dev.leasehold.spring.LeaseholdAutoConfiguration;
import dev.leasehold.spring.Locked;
import java.sql.Connection;
import java.sql.SQLException;
import java.time.Duration;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import javax.sql.DataSource;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.springframework.amqp.rabbit.connection.CachingConnectionFactory;
import org.springframework.amqp.rabbit.connection.ConnectionFactory;
import org.springframework.amqp.rabbit.core.RabbitAdmin;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.autoconfigure.aop.AopAutoConfiguration;
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

/**
 * A delayed retry whose job runs longer than the request records' stale threshold (2 s) and the
 * queue's claim timeout (1 s), with two instances on one database (and one broker): the running
 * retry keeps its claim and its delivery alive, so the job runs once and commits once, and the
 * ledger and the queue end settled (SUCCESS, nothing waiting).
 */
class RetryOutlastingItsClaimTest {

    static final Duration JOB_TIME = Duration.ofSeconds(6);

    /** Every call of the job, by instance, across both contexts. */
    static final List<String> CALLS = new CopyOnWriteArrayList<>();

    static volatile CountDownLatch entered = new CountDownLatch(1);

    /** Whether the first call makes instance A's request records unreachable while it runs. */
    static volatile boolean firstCallLosesItsHeartbeats;

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
            entered.countDown();
            if (first && firstCallLosesItsHeartbeats) {
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

    @BeforeEach
    void reset() {
        CALLS.clear();
        RECORDS_DOWN.set(false);
        firstCallLosesItsHeartbeats = false;
        entered = new CountDownLatch(1);
    }

    private static ApplicationContextRunner instance(String name, String database) {
        return new ApplicationContextRunner()
                .withConfiguration(AutoConfigurations.of(
                        DataSourceAutoConfiguration.class,
                        DataSourceTransactionManagerAutoConfiguration.class,
                        TransactionAutoConfiguration.class,
                        AopAutoConfiguration.class,
                        LeaseholdAutoConfiguration.class))
                .withPropertyValues(
                        "test.instance=" + name,
                        "spring.datasource.url=jdbc:h2:mem:" + database + ";DB_CLOSE_DELAY=-1",
                        "leasehold.stale-scan.enabled=false",
                        "leasehold.idempotency.stale-after=2s",
                        "leasehold.retry.claim-timeout=1s",
                        "leasehold.retry.poll-interval=100ms",
                        "leasehold.retry.initial-delay=100ms",
                        "leasehold.retry.max-delay=400ms",
                        "leasehold.retry.max-attempts=1000",
                        "leasehold.lock.lease-time=3s")
                .withBean(SlowJob.class);
    }

    /** Makes the job busy, calls it on {@code a} so that it is stored for a retry, then frees the key. */
    private static void storeARetry(AssertableApplicationContext a, String id) {
        JdbcTemplate jdbc = new JdbcTemplate(a.getBean(DataSource.class));
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
        String database = "retry-outlast-" + UUID.randomUUID();
        instance("A", database).run(a -> instance("B", database).run(b -> {
            assertThat(a).hasNotFailed().hasSingleBean(JdbcRetryQueue.class);
            assertThat(b).hasNotFailed().hasSingleBean(JdbcRetryQueue.class);
            JdbcTemplate jdbc = new JdbcTemplate(a.getBean(DataSource.class));
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
        String database = "retry-heartbeat-" + UUID.randomUUID();
        firstCallLosesItsHeartbeats = true;
        ApplicationContextRunner a = instance("A", database).withUserConfiguration(FlakyRecords.class);
        a.run(context -> {
            assertThat(context).hasNotFailed();
            JdbcTemplate jdbc = new JdbcTemplate(context.getBean(DataSource.class));
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
    void onRabbitARedeliveryWhileTheFirstRunIsStillGoingDoesNotRunTheJobAgain() {
        CachingConnectionFactory factoryA = TestRabbit.confirming();
        CachingConnectionFactory factoryB = TestRabbit.confirming();
        String prefix = "leasehold-test.outlast." + UUID.randomUUID();
        String database = "retry-outlast-rabbit-" + UUID.randomUUID();
        try {
            instance("A", database)
                    .withPropertyValues("leasehold.retry.queue=rabbit", "leasehold.retry.rabbit-queue-prefix=" + prefix)
                    .withBean(ConnectionFactory.class, () -> factoryA)
                    .run(a -> instance("B", database)
                            .withPropertyValues(
                                    "leasehold.retry.queue=rabbit", "leasehold.retry.rabbit-queue-prefix=" + prefix)
                            .withBean(ConnectionFactory.class, () -> factoryB)
                            .run(b -> {
                                assertThat(a).hasNotFailed().hasSingleBean(RabbitRetryQueue.class);
                                assertThat(b).hasNotFailed().hasSingleBean(RabbitRetryQueue.class);
                                JdbcTemplate jdbc = new JdbcTemplate(a.getBean(DataSource.class));
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
