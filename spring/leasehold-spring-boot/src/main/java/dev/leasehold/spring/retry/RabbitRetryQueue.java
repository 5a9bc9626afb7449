package dev.leasehold.spring.retry;

import com.rabbitmq.client.Channel;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.amqp.core.AcknowledgeMode;
import org.springframework.amqp.core.Message;
import org.springframework.amqp.core.MessageBuilder;
import org.springframework.amqp.core.MessageBuilderSupport;
import org.springframework.amqp.core.MessageDeliveryMode;
import org.springframework.amqp.core.MessageProperties;
import org.springframework.amqp.core.Queue;
import org.springframework.amqp.core.QueueBuilder;
import org.springframework.amqp.rabbit.connection.ConnectionFactory;
import org.springframework.amqp.rabbit.core.RabbitAdmin;
import org.springframework.amqp.rabbit.core.RabbitTemplate;
import org.springframework.amqp.rabbit.listener.SimpleMessageListenerContainer;
import org.springframework.amqp.rabbit.listener.api.ChannelAwareMessageListener;

/**
 * A {@link RetryQueue} on RabbitMQ through Spring AMQP: delayed delivery by per-queue TTL and
 * dead-lettering, no plugin needed.
 *
 * <ol>
 *   <li>{@link #enqueue} publishes a persistent message to the durable queue {@code
 *       <prefix>.delay.<ms>}, whose {@code x-message-ttl} is that many milliseconds and whose
 *       dead-letter target is the queue {@code <prefix>.due}. The delay is rounded up to a power of
 *       two milliseconds (at least 128), so every message in a delay queue has the same TTL and
 *       expires in order: a task is delivered after at least its delay and at most about twice it.
 *       It returns once the broker confirmed the message (publisher confirms), so a stored task
 *       survives a broker restart.
 *   <li>A listener consumes {@code <prefix>.due} with manual acknowledgements, one message at a
 *       time, and acknowledges only after the handler returned: a delivery cut by a broker restart or
 *       a crash is delivered again (at least once).
 *   <li>{@link #park} publishes to the durable queue {@code <prefix>.parked}, with the error in the
 *       header {@code x-leasehold-error}.
 * </ol>
 *
 * The broker cannot de-duplicate at enqueue; the handler de-duplicates by key. The connection
 * factory must do simple publisher confirms. Thread-safe.
 */
public final class RabbitRetryQueue implements RetryQueue {

    private static final Logger log = LoggerFactory.getLogger(RabbitRetryQueue.class);
    private static final String HEADER = "x-leasehold-";
    private static final long SMALLEST_DELAY_MS = 128;

    private final ConnectionFactory connectionFactory;
    private final RabbitTemplate template;
    private final RabbitAdmin admin;
    private final String prefix;
    private final Duration redeliveryDelay;
    private final Duration confirmTimeout;
    private SimpleMessageListenerContainer container;

    /**
     * A queue on {@code connectionFactory}, which must have simple publisher confirms.
     *
     * @param prefix the prefix of the queue names
     * @param redeliveryDelay when a delivery whose handler threw is tried again
     * @param confirmTimeout how long to wait for the broker to confirm a stored task
     */
    public RabbitRetryQueue(
            ConnectionFactory connectionFactory, String prefix, Duration redeliveryDelay, Duration confirmTimeout) {
        this.connectionFactory = Objects.requireNonNull(connectionFactory, "connectionFactory");
        if (!connectionFactory.isSimplePublisherConfirms()) {
            throw new IllegalArgumentException("the RabbitMQ retry queue needs a connection factory with simple"
                    + " publisher confirms (spring.rabbitmq.publisher-confirm-type=simple), so a stored retry is"
                    + " known to be on the broker");
        }
        if (prefix == null || prefix.isBlank() || prefix.length() > 200) {
            throw new IllegalArgumentException("queue prefix must be 1 to 200 characters, was " + prefix);
        }
        this.prefix = prefix;
        this.redeliveryDelay = Objects.requireNonNull(redeliveryDelay, "redeliveryDelay");
        this.confirmTimeout = Objects.requireNonNull(confirmTimeout, "confirmTimeout");
        this.template = new RabbitTemplate(connectionFactory);
        this.admin = new RabbitAdmin(connectionFactory);
    }

    @Override
    public String name() {
        return "rabbit";
    }

    /** The queue tasks wait in until they are due; they are consumed from here. */
    public String dueQueue() {
        return prefix + ".due";
    }

    /** The queue parked tasks go to. */
    public String parkedQueue() {
        return prefix + ".parked";
    }

    /** The delay queue of {@code delay}: its TTL is the delay rounded up to a power of two milliseconds. */
    public String delayQueue(Duration delay) {
        return prefix + ".delay." + bucket(delay);
    }

    static long bucket(Duration delay) {
        long ms = Math.max(SMALLEST_DELAY_MS, delay.toMillis());
        long bucket = Long.highestOneBit(ms);
        return bucket == ms ? ms : bucket << 1;
    }

    @Override
    public boolean enqueue(RetryTask task, Duration delay) {
        long ttl = bucket(delay);
        String queue = prefix + ".delay." + ttl;
        // Declared on every enqueue (idempotent): a message published to a missing queue would be
        // confirmed and dropped.
        admin.declareQueue(dueQueueDefinition());
        admin.declareQueue(QueueBuilder.durable(queue)
                .ttl((int) Math.min(Integer.MAX_VALUE, ttl))
                .deadLetterExchange("")
                .deadLetterRoutingKey(dueQueue())
                .build());
        publish(queue, message(task, null));
        return true;
    }

    @Override
    public void park(RetryTask task, String error) {
        admin.declareQueue(QueueBuilder.durable(parkedQueue()).build());
        publish(parkedQueue(), message(task, error));
    }

    private Queue dueQueueDefinition() {
        return QueueBuilder.durable(dueQueue()).build();
    }

    private void publish(String queue, Message message) {
        template.invoke(operations -> {
            operations.send("", queue, message);
            operations.waitForConfirmsOrDie(confirmTimeout.toMillis());
            return null;
        });
    }

    private static Message message(RetryTask task, String error) {
        MessageBuilderSupport<Message> builder = MessageBuilder.withBody(
                        task.arguments().getBytes(StandardCharsets.UTF_8))
                .setContentType(MessageProperties.CONTENT_TYPE_JSON)
                .setContentEncoding("UTF-8")
                .setDeliveryMode(MessageDeliveryMode.PERSISTENT)
                .setMessageId(task.key())
                .setHeader(HEADER + "key", task.key())
                .setHeader(HEADER + "bean", task.bean())
                .setHeader(HEADER + "method", task.method())
                .setHeader(HEADER + "types", String.join(",", task.parameterTypes()))
                .setHeader(HEADER + "lock", task.lockKey())
                .setHeader(HEADER + "attempt", task.attempt());
        if (error != null) {
            builder.setHeader(HEADER + "error", error.length() > 1000 ? error.substring(0, 1000) : error);
        }
        return builder.build();
    }

    static RetryTask task(Message message) {
        Map<String, Object> headers = message.getMessageProperties().getHeaders();
        String types = String.valueOf(headers.get(HEADER + "types"));
        List<String> parameterTypes = types.isEmpty() ? List.of() : Arrays.asList(types.split(","));
        return new RetryTask(
                String.valueOf(headers.get(HEADER + "key")),
                String.valueOf(headers.get(HEADER + "bean")),
                String.valueOf(headers.get(HEADER + "method")),
                parameterTypes,
                new String(message.getBody(), StandardCharsets.UTF_8),
                String.valueOf(headers.get(HEADER + "lock")),
                Integer.parseInt(String.valueOf(headers.get(HEADER + "attempt"))));
    }

    @Override
    public synchronized void start(RetryHandler handler) {
        if (container != null) {
            return;
        }
        admin.declareQueue(dueQueueDefinition());
        SimpleMessageListenerContainer listener = new SimpleMessageListenerContainer(connectionFactory);
        listener.setQueueNames(dueQueue());
        listener.setAcknowledgeMode(AcknowledgeMode.MANUAL);
        listener.setPrefetchCount(1);
        listener.setConcurrentConsumers(1);
        listener.setRecoveryInterval(1000);
        listener.setMissingQueuesFatal(false);
        listener.setMessageListener(
                (ChannelAwareMessageListener) (message, channel) -> deliver(handler, message, channel));
        listener.afterPropertiesSet();
        listener.start();
        container = listener;
    }

    private void deliver(RetryHandler handler, Message message, Channel channel) throws Exception {
        long tag = message.getMessageProperties().getDeliveryTag();
        RetryTask task;
        try {
            task = task(message);
        } catch (RuntimeException e) {
            // Not a task this queue wrote: keep it for an operator rather than loop on it.
            log.error(
                    "delayed retry message {} is malformed, moved to {}: {}",
                    message.getMessageProperties().getMessageId(),
                    parkedQueue(),
                    e.toString());
            admin.declareQueue(QueueBuilder.durable(parkedQueue()).build());
            publish(parkedQueue(), message);
            channel.basicAck(tag, false);
            return;
        }
        try {
            handler.handle(task);
        } catch (Exception e) {
            log.warn(
                    "delayed retry {} of {}.{} not settled, delivered again in {}: {}",
                    task.key(),
                    task.bean(),
                    task.method(),
                    redeliveryDelay,
                    e.toString());
            try {
                enqueue(task, redeliveryDelay);
            } catch (RuntimeException notStored) {
                // Back on the due queue at once rather than lost; the channel may be gone, then the
                // broker requeues the unacknowledged delivery itself.
                channel.basicNack(tag, false, true);
                return;
            }
        }
        channel.basicAck(tag, false);
    }

    @Override
    public synchronized void stop() {
        if (container != null) {
            container.stop();
            container.destroy();
            container = null;
        }
    }
}
