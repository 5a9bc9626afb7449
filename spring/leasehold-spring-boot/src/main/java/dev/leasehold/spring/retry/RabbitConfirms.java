package dev.leasehold.spring.retry;

import org.springframework.amqp.rabbit.connection.CachingConnectionFactory;
import org.springframework.amqp.rabbit.connection.ConnectionFactory;

/** A connection factory with simple publisher confirms for the RabbitMQ retry queue. */
final class RabbitConfirms {

    private RabbitConfirms() {}

    /**
     * The application's factory if it already confirms; otherwise a factory of Leasehold's own over
     * the same RabbitMQ client settings, with simple confirms, so the application's publishing is
     * left as it is.
     */
    static ConnectionFactory confirming(ConnectionFactory factory) {
        if (factory.isSimplePublisherConfirms()) {
            return factory;
        }
        if (factory instanceof CachingConnectionFactory caching) {
            CachingConnectionFactory own = new CachingConnectionFactory(caching.getRabbitConnectionFactory());
            own.setPublisherConfirmType(CachingConnectionFactory.ConfirmType.SIMPLE);
            own.setConnectionNameStrategy(f -> "leasehold-retry");
            return own;
        }
        throw new IllegalStateException("the RabbitMQ retry queue needs publisher confirms: set"
                + " spring.rabbitmq.publisher-confirm-type=simple, or leasehold.retry.queue=jdbc");
    }
}
