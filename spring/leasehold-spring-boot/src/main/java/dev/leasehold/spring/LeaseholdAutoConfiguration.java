package dev.leasehold.spring;

import dev.leasehold.LeaseListener;
import dev.leasehold.LockService;
import dev.leasehold.spi.LeaseStore;
import dev.leasehold.spring.internal.Schedulers;
import javax.sql.DataSource;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnProperty;
import org.springframework.boot.context.properties.EnableConfigurationProperties;
import org.springframework.boot.sql.init.dependency.DependsOnDatabaseInitialization;
import org.springframework.context.ApplicationContext;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.core.Ordered;
import org.springframework.scheduling.TaskScheduler;

/**
 * Leasehold's core for Spring Boot: the {@link LeaseholdProperties}, a {@link LeaseStore} for
 * {@code leasehold.backend} and a {@link LockService}; with the SQL store, the housekeeping of its
 * ended rows. Each feature has an auto-configuration of its own, ordered after this one. Every bean
 * backs off when the application defines its own.
 */
@AutoConfiguration(
        afterName = {
            "org.springframework.boot.jdbc.autoconfigure.DataSourceAutoConfiguration",
            "org.springframework.boot.data.redis.autoconfigure.DataRedisAutoConfiguration",
            "org.springframework.boot.flyway.autoconfigure.FlywayAutoConfiguration",
            "org.springframework.boot.amqp.autoconfigure.RabbitAutoConfiguration",
            "org.springframework.boot.jackson.autoconfigure.JacksonAutoConfiguration",
            "org.springframework.boot.jackson2.autoconfigure.Jackson2AutoConfiguration",
            "org.springframework.boot.autoconfigure.task.TaskSchedulingAutoConfiguration",
            "org.springframework.boot.jdbc.autoconfigure.DataSourceTransactionManagerAutoConfiguration",
            "org.springframework.boot.transaction.autoconfigure.TransactionAutoConfiguration",
            "org.springframework.boot.micrometer.metrics.autoconfigure.CompositeMeterRegistryAutoConfiguration"
        })
@EnableConfigurationProperties(LeaseholdProperties.class)
public class LeaseholdAutoConfiguration {

    /**
     * Order of the {@code @Idempotent} interceptor: outermost, before the lock, so a request is
     * claimed before its session lease is taken.
     */
    public static final int IDEMPOTENT_ORDER = Ordered.HIGHEST_PRECEDENCE + 100;
    /**
     * Order of the {@code @Locked} interceptor (and of {@code @ScheduledLock}): before the
     * transaction interceptor, so the lease is taken before the transaction begins.
     */
    public static final int LOCKED_ORDER = Ordered.HIGHEST_PRECEDENCE + 200;

    @Bean(destroyMethod = "close")
    @ConditionalOnMissingBean
    @DependsOnDatabaseInitialization
    LeaseStore leaseholdLeaseStore(
            LeaseholdProperties properties, ObjectProvider<DataSource> dataSource, ApplicationContext context) {
        return LeaseStores.create(properties, dataSource.getIfAvailable(), context);
    }

    @Bean(destroyMethod = "close")
    @ConditionalOnMissingBean
    LockService leaseholdLockService(
            LeaseStore store, LeaseholdProperties properties, ObjectProvider<LeaseListener> listeners) {
        LockService.Builder builder =
                LockService.builder(store).fair(properties.getLock().isFair());
        listeners.orderedStream().forEach(builder::listener);
        return builder.build();
    }

    /** Deleting the SQL lease store's ended rows, when the lease store is the SQL one. */
    @Configuration(proxyBeanMethods = false)
    @ConditionalOnClass(name = "dev.leasehold.jdbc.JdbcLeaseStore")
    @ConditionalOnProperty(
            prefix = "leasehold.jdbc.housekeeping",
            name = "enabled",
            havingValue = "true",
            matchIfMissing = true)
    static class HousekeepingConfiguration {

        @Bean
        LeaseRowHousekeeping leaseholdLeaseRowHousekeeping(
                LeaseStore store, LeaseholdProperties properties, ObjectProvider<TaskScheduler> schedulers) {
            return new LeaseRowHousekeeping(
                    store,
                    properties.getJdbc().getHousekeeping(),
                    () -> Schedulers.ownOrShared(schedulers, "leasehold-rows-"));
        }
    }
}
