package dev.leasehold.spring.retry;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.leasehold.Lease;
import dev.leasehold.LeaseOptions;
import dev.leasehold.LockKey;
import dev.leasehold.LockOwner;
import dev.leasehold.LockService;
import dev.leasehold.spring.LeaseholdAutoConfiguration;
import dev.leasehold.spring.Locked;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import javax.sql.DataSource;
import org.junit.jupiter.api.Test;
import org.springframework.amqp.rabbit.connection.CachingConnectionFactory;
import org.springframework.amqp.rabbit.connection.ConnectionFactory;
import org.springframework.amqp.rabbit.core.RabbitAdmin;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.autoconfigure.aop.AopAutoConfiguration;
import org.springframework.boot.jdbc.autoconfigure.DataSourceAutoConfiguration;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.jdbc.core.JdbcTemplate;

/**
 * Delayed retries on RabbitMQ across a broker crash: tasks waiting in the delay queues and a task
 * being run while the broker is killed (SIGKILL) and restarted. Invariant: every task runs exactly
 * once — none lost, none run twice. Runs on a private RabbitMQ node, never the shared one.
 */
class RabbitRetryRestartTest {

    static final int TASKS = 10;

    /** A background job that defers when its key is busy and counts its runs in the database. */
    public static class Jobs {
        final JdbcTemplate jdbc;
        final CountDownLatch slowEntered = new CountDownLatch(1);
        final CountDownLatch slowMayFinish = new CountDownLatch(1);

        public Jobs(DataSource dataSource) {
            this.jdbc = new JdbcTemplate(dataSource);
        }

        /** Through the proxy: a method, not the field. */
        public CountDownLatch slowEntered() {
            return slowEntered;
        }

        public CountDownLatch slowMayFinish() {
            return slowMayFinish;
        }

        @Locked(namespace = "job", key = "#id", onBusy = Locked.OnBusy.RETRY_LATER)
        public void run(String id) throws InterruptedException {
            jdbc.update("INSERT INTO job_run (id) VALUES (?)", id);
            if (id.equals("slow")) {
                slowEntered.countDown();
                slowMayFinish.await(60, TimeUnit.SECONDS);
            }
        }
    }

    @Test
    void noRetryIsLostOrRunTwiceWhenTheBrokerIsKilledAndRestarted() throws Exception {
        try (PrivateRabbitNode rabbit = PrivateRabbitNode.start()) {
            CachingConnectionFactory factory = TestRabbit.confirming(rabbit.port());
            new ApplicationContextRunner()
                    .withConfiguration(AutoConfigurations.of(
                            DataSourceAutoConfiguration.class,
                            AopAutoConfiguration.class,
                            LeaseholdAutoConfiguration.class))
                    .withPropertyValues(
                            "spring.datasource.url=jdbc:h2:mem:rabbit-restart-" + UUID.randomUUID()
                                    + ";DB_CLOSE_DELAY=-1",
                            "leasehold.stale-scan.enabled=false",
                            "leasehold.retry.queue=rabbit",
                            "leasehold.retry.initial-delay=300ms",
                            "leasehold.retry.max-delay=2s",
                            "leasehold.retry.max-attempts=1000")
                    .withBean(ConnectionFactory.class, () -> factory)
                    .withBean(Jobs.class)
                    .run(context -> {
                        assertThat(context).hasNotFailed();
                        assertThat(context).hasSingleBean(RabbitRetryQueue.class);
                        JdbcTemplate jdbc = new JdbcTemplate(context.getBean(DataSource.class));
                        jdbc.execute("CREATE TABLE job_run (id VARCHAR(64) NOT NULL)");
                        Jobs jobs = context.getBean(Jobs.class);
                        LockService locks = context.getBean(LockService.class);

                        List<String> ids = new ArrayList<>();
                        for (int i = 0; i < TASKS; i++) {
                            ids.add("job-" + i);
                        }
                        ids.add("slow");
                        Map<String, Lease> held = new LinkedHashMap<>();
                        for (String id : ids) {
                            held.put(
                                    id,
                                    locks.tryAcquire(
                                                    LockKey.of("job", id),
                                                    LeaseOptions.defaults(),
                                                    LockOwner.create("elsewhere"))
                                            .orElseThrow());
                        }
                        for (String id : ids) {
                            jobs.run(id); // busy: stored on the broker, returns at once
                        }
                        assertThat(runs(jdbc))
                                .as("nothing ran while the keys were busy")
                                .isEmpty();

                        held.remove("slow").close();
                        assertThat(jobs.slowEntered().await(30, TimeUnit.SECONDS))
                                .as("the slow job is being delivered")
                                .isTrue();
                        rabbit.kill(); // its delivery is not acknowledged yet; the rest wait in delay queues
                        for (Lease lease : held.values()) {
                            lease.close();
                        }
                        jobs.slowMayFinish().countDown();
                        rabbit.restart();

                        await().atMost(Duration.ofSeconds(90))
                                .until(() -> runs(jdbc).size() == ids.size());
                        await().during(Duration.ofSeconds(3))
                                .atMost(Duration.ofSeconds(10))
                                .until(() -> runs(jdbc).values().stream().allMatch(n -> n == 1));
                        assertThat(runs(jdbc)).containsOnlyKeys(ids);
                        assertThat(runs(jdbc).values())
                                .as("each task ran exactly once")
                                .containsOnly(1);

                        RabbitRetryQueue queue = context.getBean(RabbitRetryQueue.class);
                        RabbitAdmin admin = new RabbitAdmin(factory);
                        assertThat(admin.getQueueInfo(queue.dueQueue()).getMessageCount())
                                .isZero();
                        assertThat(admin.getQueueInfo(queue.parkedQueue()))
                                .as("nothing parked")
                                .isNull();
                    });
            factory.destroy();
        }
    }

    private static Map<String, Integer> runs(JdbcTemplate jdbc) {
        Map<String, Integer> runs = new LinkedHashMap<>();
        jdbc.query("SELECT id, COUNT(*) FROM job_run GROUP BY id", row -> {
            runs.put(row.getString(1), row.getInt(2));
        });
        return runs;
    }
}
