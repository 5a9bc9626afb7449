package dev.leasehold.spring.retry;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.leasehold.Lease;
import dev.leasehold.LeaseOptions;
import dev.leasehold.LockKey;
import dev.leasehold.LockOwner;
import dev.leasehold.LockService;
import dev.leasehold.spring.LeaseholdAutoConfigurations;
import dev.leasehold.spring.lock.Locked;
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
 * being run while the broker is killed (SIGKILL) and restarted. Invariant: no task runs twice, the
 * task being run is not lost, and the queues work after the restart. A task that the broker moved
 * from its delay queue to the due queue in the instant before the kill can be lost: classic queues
 * dead-letter at most once, so that move has no confirm. Runs on a private RabbitMQ node, never the
 * shared one.
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
    void noRetryRunsTwiceAndTheTaskBeingRunIsNotLostWhenTheBrokerIsKilledAndRestarted() throws Exception {
        try (PrivateRabbitNode rabbit = PrivateRabbitNode.start()) {
            CachingConnectionFactory factory = TestRabbit.confirming(rabbit.port());
            new ApplicationContextRunner()
                    .withConfiguration(AutoConfigurations.of(LeaseholdAutoConfigurations.with(
                            DataSourceAutoConfiguration.class, AopAutoConfiguration.class)))
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

                        RabbitRetryQueue queue = context.getBean(RabbitRetryQueue.class);
                        RabbitAdmin admin = new RabbitAdmin(factory);
                        // Done when every task ran, or when nothing is left to deliver for 3 s.
                        await().atMost(Duration.ofSeconds(90))
                                .ignoreExceptions()
                                .until(() -> runs(jdbc).size() == ids.size() || waiting(admin, queue) == 0);
                        await().during(Duration.ofSeconds(3))
                                .atMost(Duration.ofSeconds(30))
                                .ignoreExceptions()
                                .until(() -> runs(jdbc).size() == ids.size() || waiting(admin, queue) == 0);
                        Map<String, Integer> runs = runs(jdbc);
                        assertThat(runs.values()).as("no task ran twice").containsOnly(1);
                        assertThat(runs)
                                .as("the task being run when the broker died")
                                .containsKey("slow");
                        assertThat(ids).containsAll(runs.keySet());
                        assertThat(runs.size())
                                .as("tasks delivered after the restart (a task moving to the due queue at the"
                                        + " kill may be lost: " + (ids.size() - runs.size()) + " of " + ids.size()
                                        + ")")
                                .isGreaterThan(1);
                        assertThat(admin.getQueueInfo(queue.dueQueue()).getMessageCount())
                                .isZero();
                        assertThat(admin.getQueueInfo(queue.parkedQueue()))
                                .as("nothing parked")
                                .isNull();
                    });
            factory.destroy();
        }
    }

    /** Messages still in the due queue and in the delay queues the retry settings use (300 ms to 2 s). */
    private static long waiting(RabbitAdmin admin, RabbitRetryQueue queue) {
        long waiting = count(admin, queue.dueQueue());
        for (long ms = 300; ms <= 2048; ms *= 2) {
            waiting += count(admin, queue.delayQueue(Duration.ofMillis(ms)));
        }
        return waiting;
    }

    private static long count(RabbitAdmin admin, String queueName) {
        var info = admin.getQueueInfo(queueName);
        return info == null ? 0 : info.getMessageCount();
    }

    private static Map<String, Integer> runs(JdbcTemplate jdbc) {
        Map<String, Integer> runs = new LinkedHashMap<>();
        jdbc.query("SELECT id, COUNT(*) FROM job_run GROUP BY id", row -> {
            runs.put(row.getString(1), row.getInt(2));
        });
        return runs;
    }
}
