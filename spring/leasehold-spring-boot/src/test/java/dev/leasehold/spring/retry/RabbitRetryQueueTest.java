package dev.leasehold.spring.retry;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import java.time.Duration;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.springframework.amqp.core.Message;
import org.springframework.amqp.rabbit.connection.CachingConnectionFactory;
import org.springframework.amqp.rabbit.core.RabbitAdmin;
import org.springframework.amqp.rabbit.core.RabbitTemplate;

/** The RabbitMQ retry queue on the real local broker, with queues of its own. */
class RabbitRetryQueueTest {

    private CachingConnectionFactory factory;
    private RabbitRetryQueue queue;
    private String prefix;

    @BeforeEach
    void connect() {
        factory = TestRabbit.confirming();
        prefix = "leasehold-test." + UUID.randomUUID();
        queue = new RabbitRetryQueue(factory, prefix, Duration.ofMillis(200), Duration.ofSeconds(10));
    }

    @AfterEach
    void deleteQueues() {
        queue.stop();
        RabbitAdmin admin = new RabbitAdmin(factory);
        for (long ms = 128; ms <= 8192; ms <<= 1) {
            admin.deleteQueue(prefix + ".delay." + ms);
        }
        admin.deleteQueue(queue.dueQueue());
        admin.deleteQueue(queue.parkedQueue());
        factory.destroy();
    }

    private static RetryTask task(String name) {
        return new RetryTask(
                RetryTask.keyOf(name),
                "jobs",
                "run",
                List.of("java.lang.String"),
                "[\"" + name + "\"]",
                "job:" + name,
                0);
    }

    @Test
    void aShortDelayIsNotHeldBehindALongerOne() {
        List<String> delivered = new CopyOnWriteArrayList<>();
        queue.start(task -> delivered.add(task.lockKey()));
        queue.enqueue(task("late"), Duration.ofSeconds(4));
        queue.enqueue(task("early"), Duration.ofMillis(200));
        await().atMost(Duration.ofSeconds(20)).until(() -> delivered.size() == 2);
        assertThat(delivered).containsExactly("job:early", "job:late");
    }

    @Test
    void aTaskArrivesWhole() {
        List<RetryTask> delivered = new CopyOnWriteArrayList<>();
        queue.start(delivered::add);
        RetryTask sent = task("whole").nextAttempt().nextAttempt();
        queue.enqueue(sent, Duration.ZERO);
        await().atMost(Duration.ofSeconds(10)).until(() -> delivered.size() == 1);
        assertThat(delivered.get(0)).isEqualTo(sent);
    }

    @Test
    void aHandlerThatThrowsGetsTheTaskAgain() {
        ConcurrentHashMap<String, AtomicInteger> deliveries = new ConcurrentHashMap<>();
        queue.start(task -> {
            if (deliveries.computeIfAbsent(task.key(), k -> new AtomicInteger()).incrementAndGet() == 1) {
                throw new IllegalStateException("database down");
            }
        });
        RetryTask task = task("flaky");
        queue.enqueue(task, Duration.ZERO);
        await().atMost(Duration.ofSeconds(10))
                .until(() ->
                        deliveries.getOrDefault(task.key(), new AtomicInteger()).get() == 2);
        await().during(Duration.ofMillis(600))
                .atMost(Duration.ofSeconds(5))
                .until(() -> deliveries.get(task.key()).get() == 2);
    }

    @Test
    void aParkedTaskWaitsInTheParkedQueueWithItsError() {
        RetryTask task = task("parked");
        queue.park(task, "busy 20 times");
        Message parked = new RabbitTemplate(factory).receive(queue.parkedQueue(), 5000);
        assertThat(parked).isNotNull();
        assertThat(RabbitRetryQueue.task(parked)).isEqualTo(task);
        assertThat(parked.getMessageProperties().<String>getHeader("x-leasehold-error"))
                .isEqualTo("busy 20 times");
    }

    @Test
    void delaysRoundUpToAPowerOfTwoSoOneQueueHasOneTtl() {
        assertThat(RabbitRetryQueue.bucket(Duration.ZERO)).isEqualTo(128);
        assertThat(RabbitRetryQueue.bucket(Duration.ofMillis(128))).isEqualTo(128);
        assertThat(RabbitRetryQueue.bucket(Duration.ofMillis(129))).isEqualTo(256);
        assertThat(RabbitRetryQueue.bucket(Duration.ofSeconds(2))).isEqualTo(2048);
        assertThat(queue.delayQueue(Duration.ofSeconds(5))).isEqualTo(prefix + ".delay.8192");
    }

    @Test
    void aFactoryWithoutPublisherConfirmsIsRefused() {
        CachingConnectionFactory plain = new CachingConnectionFactory(TestRabbit.HOST, TestRabbit.PORT);
        try {
            assertThatThrownBy(() -> new RabbitRetryQueue(plain, prefix, Duration.ofSeconds(1), Duration.ofSeconds(1)))
                    .isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining("publisher-confirm-type=simple");
        } finally {
            plain.destroy();
        }
    }
}
