package dev.leasehold.spring.retry;

import dev.leasehold.jdbc.Database;
import dev.leasehold.spring.LeaseholdAutoConfiguration;
import dev.leasehold.spring.LeaseholdProperties;
import dev.leasehold.spring.LeaseholdRetryProperties;
import dev.leasehold.spring.actuator.LeaseholdMetrics;
import dev.leasehold.spring.internal.JacksonCondition;
import dev.leasehold.spring.internal.LeaseholdJson;
import java.sql.SQLException;
import java.time.Duration;
import javax.sql.DataSource;
import org.springframework.amqp.rabbit.connection.ConnectionFactory;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnProperty;
import org.springframework.boot.sql.init.dependency.DependsOnDatabaseInitialization;
import org.springframework.context.ApplicationContext;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Conditional;
import org.springframework.context.annotation.Configuration;

/**
 * Delayed retries of {@code @Locked(onBusy = RETRY_LATER)} calls: a {@link RetryQueue} on RabbitMQ
 * or in the database, and the {@link DelayedRetries} over it. Delivery starts only when a bean has
 * a {@code RETRY_LATER} method or {@code leasehold.retry.enabled=true}.
 */
@AutoConfiguration(
        after = LeaseholdAutoConfiguration.class,
        afterName = "dev.leasehold.spring.schema.LeaseholdSchemaAutoConfiguration")
@Conditional(JacksonCondition.class)
@ConditionalOnProperty(prefix = "leasehold.retry", name = "enabled", havingValue = "true", matchIfMissing = true)
public class LeaseholdRetryAutoConfiguration {

    /** The RabbitMQ retry queue over the application's connection factory, with publisher confirms. */
    @Configuration(proxyBeanMethods = false)
    @ConditionalOnClass(name = "org.springframework.amqp.rabbit.connection.ConnectionFactory")
    @ConditionalOnBean(type = "org.springframework.amqp.rabbit.connection.ConnectionFactory")
    @Conditional(RetryQueueConditions.Rabbit.class)
    static class RabbitQueue {

        @Bean(destroyMethod = "stop")
        @ConditionalOnMissingBean(RetryQueue.class)
        RabbitRetryQueue leaseholdRabbitRetryQueue(
                ConnectionFactory connectionFactory, LeaseholdProperties properties) {
            return new RabbitRetryQueue(
                    RabbitConfirms.confirming(connectionFactory),
                    properties.getRetry().getRabbitQueuePrefix(),
                    properties.getRetry().getInitialDelay(),
                    Duration.ofSeconds(10));
        }
    }

    @Configuration(proxyBeanMethods = false)
    @ConditionalOnClass(name = "dev.leasehold.jdbc.JdbcLeaseStore")
    @ConditionalOnBean(DataSource.class)
    @Conditional(RetryQueueConditions.Jdbc.class)
    static class JdbcQueue {

        @Bean
        @ConditionalOnMissingBean(RetryQueue.class)
        @DependsOnDatabaseInitialization
        JdbcRetryQueue leaseholdJdbcRetryQueue(DataSource dataSource, LeaseholdProperties properties)
                throws SQLException {
            LeaseholdRetryProperties retry = properties.getRetry();
            return new JdbcRetryQueue(
                    dataSource,
                    Database.detect(dataSource),
                    retry.getPollInterval(),
                    retry.getClaimTimeout(),
                    retry.getInitialDelay());
        }
    }

    @Bean
    @ConditionalOnBean(RetryQueue.class)
    @ConditionalOnMissingBean
    DelayedRetries leaseholdDelayedRetries(
            RetryQueue queue,
            ApplicationContext context,
            LeaseholdProperties properties,
            ObjectProvider<LeaseholdMetrics> metrics) {
        return new DelayedRetries(
                queue, context, LeaseholdJson.of(context), properties.getRetry(), RetryLedgers.of(context), outcome -> {
                    LeaseholdMetrics m = metrics.getIfAvailable();
                    if (m != null) {
                        m.retry(outcome);
                    }
                });
    }
}
