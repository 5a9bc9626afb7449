package dev.leasehold.spring;

import dev.leasehold.LeaseListener;
import dev.leasehold.LockService;
import dev.leasehold.idempotency.IdempotentExecutor;
import dev.leasehold.idempotency.RequestRecords;
import dev.leasehold.idempotency.SideEffects;
import dev.leasehold.jdbc.Database;
import dev.leasehold.spi.LeaseStore;
import dev.leasehold.spring.integration.LeaseholdLockRegistry;
import dev.leasehold.spring.retry.JdbcRetryQueue;
import dev.leasehold.spring.retry.RabbitRetryQueue;
import dev.leasehold.spring.retry.RetryQueue;
import dev.leasehold.spring.scheduling.ScheduledLock;
import dev.leasehold.spring.scheduling.ScheduledLockInterceptor;
import dev.leasehold.spring.scheduling.ScheduledTaskLock;
import dev.leasehold.spring.schema.LeaseholdFlywayMigration;
import dev.leasehold.spring.schema.LeaseholdScriptInitializer;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.observation.ObservationRegistry;
import java.sql.SQLException;
import javax.sql.DataSource;
import org.springframework.aop.Advisor;
import org.springframework.aop.support.DefaultPointcutAdvisor;
import org.springframework.aop.support.annotation.AnnotationMatchingPointcut;
import org.springframework.beans.factory.ListableBeanFactory;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.beans.factory.SmartInitializingSingleton;
import org.springframework.beans.factory.config.BeanDefinition;
import org.springframework.boot.actuate.endpoint.annotation.Endpoint;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnProperty;
import org.springframework.boot.autoconfigure.condition.ConditionalOnWebApplication;
import org.springframework.boot.context.properties.EnableConfigurationProperties;
import org.springframework.boot.sql.init.DatabaseInitializationMode;
import org.springframework.boot.sql.init.dependency.DatabaseInitializationDependencyConfigurer;
import org.springframework.boot.sql.init.dependency.DependsOnDatabaseInitialization;
import org.springframework.context.ApplicationContext;
import org.springframework.context.ApplicationEventPublisher;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Conditional;
import org.springframework.context.annotation.Configuration;
import org.springframework.context.annotation.Import;
import org.springframework.context.annotation.Role;
import org.springframework.core.Ordered;
import org.springframework.core.env.Environment;

/**
 * Leasehold for Spring Boot: a {@link LeaseStore} for {@code leasehold.backend}, a {@link
 * LockService}, the {@link Locked} and {@link Idempotent} interceptors (ordered outside the
 * transaction interceptor), metrics, audit log, problem responses, actuator endpoints, the degrade
 * switch, the stale-lease scan and delayed retries. Every bean backs off when the application
 * defines its own.
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

    /** Order of the {@link Idempotent} interceptor: outermost, before the lock (S1.12: request, then session). */
    public static final int IDEMPOTENT_ORDER = Ordered.HIGHEST_PRECEDENCE + 100;
    /** Order of the {@link Locked} interceptor: before the transaction interceptor (S2.5). */
    public static final int LOCKED_ORDER = Ordered.HIGHEST_PRECEDENCE + 200;

    @Bean
    @ConditionalOnMissingBean
    LockModeSwitch leaseholdLockMode(LeaseholdProperties properties) {
        return new LockModeSwitch(properties.getLock().getMode());
    }

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

    @Bean
    @ConditionalOnMissingBean
    LeaseholdObservations leaseholdObservations(ObjectProvider<ObservationRegistry> registry) {
        return new LeaseholdObservations(registry.getIfAvailable(() -> ObservationRegistry.NOOP));
    }

    @Bean
    @ConditionalOnMissingBean
    @ConditionalOnProperty(prefix = "leasehold.audit", name = "enabled", matchIfMissing = true)
    AuditLog leaseholdAuditLog() {
        return new AuditLog();
    }

    @Bean
    @ConditionalOnProperty(prefix = "leasehold.stale-scan", name = "enabled", matchIfMissing = true)
    StaleLeaseScan leaseholdStaleLeaseScan(
            ObjectProvider<LockService> locks,
            LeaseholdProperties properties,
            ObjectProvider<LeaseholdMetrics> metrics) {
        return new StaleLeaseScan(locks.getObject(), properties.getStaleScan(), count -> {
            LeaseholdMetrics m = metrics.getIfAvailable();
            if (m != null) {
                m.stale(count);
            }
        });
    }

    @Bean
    @Role(BeanDefinition.ROLE_INFRASTRUCTURE)
    static Advisor leaseholdLockedAdvisor(
            ObjectProvider<LockService> locks,
            ObjectProvider<LeaseholdProperties> properties,
            ObjectProvider<LockModeSwitch> mode,
            ObjectProvider<LeaseholdMetrics> metrics,
            ObjectProvider<DelayedRetries> retries,
            ObjectProvider<LeaseholdObservations> observations,
            Environment environment) {
        LazyInterceptor<LockedInterceptor> interceptor = new LazyInterceptor<>(() -> new LockedInterceptor(
                locks::getObject,
                properties.getObject(),
                mode::getObject,
                namespace -> {
                    LeaseholdMetrics m = metrics.getIfAvailable();
                    if (m != null) {
                        m.bypassed(namespace);
                    }
                },
                retries::getIfAvailable,
                observations.getIfAvailable(() -> new LeaseholdObservations(ObservationRegistry.NOOP))));
        DefaultPointcutAdvisor advisor =
                new DefaultPointcutAdvisor(AnnotationMatchingPointcut.forMethodAnnotation(Locked.class), interceptor);
        advisor.setOrder(lockedOrder(environment));
        return advisor;
    }

    /**
     * Adds the lease check before commit to every transaction manager bean of the context that
     * takes listeners, for the transactions {@link Locked} methods begin; warns for one that does not.
     */
    @Configuration(proxyBeanMethods = false)
    @ConditionalOnClass(name = "org.springframework.transaction.ConfigurableTransactionManager")
    static class LockedCommitConfiguration {

        @Bean
        @Role(BeanDefinition.ROLE_INFRASTRUCTURE)
        static org.springframework.beans.factory.config.BeanPostProcessor leaseholdLockedCommitCheck() {
            return new org.springframework.beans.factory.config.BeanPostProcessor() {
                @Override
                public Object postProcessAfterInitialization(Object bean, String beanName) {
                    return LockedCommitCheck.addTo(bean, beanName);
                }
            };
        }
    }

    private static int lockedOrder(Environment environment) {
        return environment.getProperty("leasehold.lock.advisor-order", Integer.class, LOCKED_ORDER);
    }

    @Bean
    static LockedMethodsCheck leaseholdLockedMethodsCheck(ListableBeanFactory beans, Environment environment) {
        return new LockedMethodsCheck(beans, lockedOrder(environment));
    }

    @Bean
    static ExpressionsCheck leaseholdExpressionsCheck(ListableBeanFactory beans) {
        return new ExpressionsCheck(beans);
    }

    /**
     * Leasehold's tables: its own Flyway history when Flyway is on the class path, else Spring
     * Boot's script initializer; either runs before every bean that depends on database
     * initialization.
     */
    @Configuration(proxyBeanMethods = false)
    @ConditionalOnClass(
            name = {
                "dev.leasehold.jdbc.JdbcLeaseStore",
                "org.springframework.boot.jdbc.init.DataSourceScriptDatabaseInitializer"
            })
    @ConditionalOnBean(DataSource.class)
    @Import(DatabaseInitializationDependencyConfigurer.class)
    static class SchemaConfiguration {

        @Configuration(proxyBeanMethods = false)
        @ConditionalOnClass(name = "org.flywaydb.core.Flyway")
        @ConditionalOnProperty(prefix = "leasehold.jdbc.flyway", name = "enabled", matchIfMissing = true)
        @Conditional(SchemaConditions.Initialize.class)
        static class FlywaySchema {

            @Bean
            @ConditionalOnMissingBean
            LeaseholdFlywayMigration leaseholdFlywayMigration(DataSource dataSource, LeaseholdProperties properties)
                    throws SQLException {
                return new LeaseholdFlywayMigration(
                        dataSource,
                        Database.detect(dataSource),
                        properties.getJdbc().getFlyway().getTable());
            }
        }

        @Configuration(proxyBeanMethods = false)
        @Conditional(SchemaConditions.WithoutFlyway.class)
        static class ScriptSchema {

            @Bean
            @ConditionalOnMissingBean
            LeaseholdScriptInitializer leaseholdScriptInitializer(DataSource dataSource, LeaseholdProperties properties)
                    throws SQLException {
                return new LeaseholdScriptInitializer(
                        dataSource,
                        Database.detect(dataSource),
                        switch (properties.getJdbc().getInitializeSchema()) {
                            case EMBEDDED -> DatabaseInitializationMode.EMBEDDED;
                            case ALWAYS -> DatabaseInitializationMode.ALWAYS;
                            case NEVER -> DatabaseInitializationMode.NEVER;
                        });
            }
        }
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
                LeaseStore store,
                LeaseholdProperties properties,
                ObjectProvider<org.springframework.scheduling.TaskScheduler> schedulers) {
            return new LeaseRowHousekeeping(
                    store, properties.getJdbc().getHousekeeping(), () -> ownOrShared(schedulers, "leasehold-rows-"));
        }
    }

    /** The application's one task scheduler, else a daemon one of Leasehold's own. */
    static org.springframework.scheduling.TaskScheduler ownOrShared(
            ObjectProvider<org.springframework.scheduling.TaskScheduler> schedulers, String threadPrefix) {
        return schedulers.getIfUnique(() -> {
            org.springframework.scheduling.concurrent.ThreadPoolTaskScheduler own =
                    new org.springframework.scheduling.concurrent.ThreadPoolTaskScheduler();
            own.setThreadNamePrefix(threadPrefix);
            own.setDaemon(true);
            own.initialize();
            return own;
        });
    }

    /**
     * Delayed retries (S2.10): a {@link RetryQueue} on RabbitMQ or in the database, and the retries
     * over it. Delivery starts only when a bean has a RETRY_LATER method or {@code
     * leasehold.retry.enabled=true}.
     */
    @Configuration(proxyBeanMethods = false)
    @Conditional(JacksonCondition.class)
    @ConditionalOnProperty(prefix = "leasehold.retry", name = "enabled", havingValue = "true", matchIfMissing = true)
    static class RetryConfiguration {

        /** The RabbitMQ retry queue over the application's connection factory, with publisher confirms. */
        @Configuration(proxyBeanMethods = false)
        @ConditionalOnClass(name = "org.springframework.amqp.rabbit.connection.ConnectionFactory")
        @ConditionalOnBean(type = "org.springframework.amqp.rabbit.connection.ConnectionFactory")
        @Conditional(RetryQueueConditions.Rabbit.class)
        static class RabbitQueue {

            @Bean(destroyMethod = "stop")
            @ConditionalOnMissingBean(RetryQueue.class)
            RabbitRetryQueue leaseholdRabbitRetryQueue(
                    org.springframework.amqp.rabbit.connection.ConnectionFactory connectionFactory,
                    LeaseholdProperties properties) {
                return new RabbitRetryQueue(
                        RabbitConfirms.confirming(connectionFactory),
                        properties.getRetry().getRabbitQueuePrefix(),
                        properties.getRetry().getInitialDelay(),
                        java.time.Duration.ofSeconds(10));
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
                LeaseholdProperties.Retry retry = properties.getRetry();
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
                    queue,
                    context,
                    LeaseholdJson.of(context),
                    properties.getRetry(),
                    RetryLedgers.of(context),
                    outcome -> {
                        LeaseholdMetrics m = metrics.getIfAvailable();
                        if (m != null) {
                            m.retry(outcome);
                        }
                    });
        }
    }

    /** Micrometer meters, when there is a registry. */
    @Configuration(proxyBeanMethods = false)
    @ConditionalOnClass(MeterRegistry.class)
    @ConditionalOnBean(MeterRegistry.class)
    static class MetricsConfiguration {

        @Bean
        @ConditionalOnMissingBean
        LeaseholdMetrics leaseholdMetrics(MeterRegistry registry) {
            return new LeaseholdMetrics(registry);
        }

        /** The purge's gauges and counter, once every bean is there (the purge may not be: no DataSource). */
        @Bean
        SmartInitializingSingleton leaseholdIdempotencyPurgeMeters(
                ObjectProvider<IdempotencyPurge> purge, MeterRegistry registry) {
            return () -> purge.ifAvailable(p -> IdempotencyPurgeMeters.bind(p, registry));
        }
    }

    /**
     * Request and side-effect records, {@link Idempotent} and the purge, when there is a DataSource,
     * the idempotency module, Spring JDBC (for the transaction) and Jackson (3, or 2).
     */
    @Configuration(proxyBeanMethods = false)
    @ConditionalOnClass(
            name = {
                "dev.leasehold.idempotency.IdempotentExecutor",
                "org.springframework.jdbc.datasource.DataSourceUtils"
            })
    @Conditional(JacksonCondition.class)
    @ConditionalOnBean(DataSource.class)
    static class IdempotencyConfiguration {

        @Bean
        @ConditionalOnMissingBean
        @DependsOnDatabaseInitialization
        RequestRecords leaseholdRequestRecords(DataSource dataSource, LeaseholdProperties properties) {
            LeaseholdProperties.Idempotency settings = properties.getIdempotency();
            RequestRecords.Builder builder = RequestRecords.builder(dataSource)
                    .staleAfter(settings.getStaleAfter())
                    .retention(settings.getRetention());
            if (settings.getAbandonedAfter() != null) {
                builder.abandonedAfter(settings.getAbandonedAfter());
            }
            return builder.build();
        }

        @Bean
        @ConditionalOnMissingBean
        @DependsOnDatabaseInitialization
        SideEffects leaseholdSideEffects(
                DataSource dataSource, LeaseholdProperties properties, ListableBeanFactory beans) {
            return SideEffects.builder(dataSource)
                    .staleAfter(properties.getIdempotency().getStaleAfter())
                    .codec(new LeaseholdJsonCodec(LeaseholdJson.of(beans)))
                    .build();
        }

        @Bean(destroyMethod = "close")
        @ConditionalOnMissingBean
        IdempotentExecutor leaseholdIdempotentExecutor(RequestRecords records, LockService locks) {
            return new IdempotentExecutor(records, locks);
        }

        @Bean
        @ConditionalOnProperty(
                prefix = "leasehold.idempotency.purge",
                name = "enabled",
                havingValue = "true",
                matchIfMissing = true)
        IdempotencyPurge leaseholdIdempotencyPurge(
                RequestRecords records,
                LeaseholdProperties properties,
                ObjectProvider<org.springframework.scheduling.TaskScheduler> schedulers) {
            return new IdempotencyPurge(
                    records, properties.getIdempotency().getPurge(), () -> ownOrShared(schedulers, "leasehold-purge-"));
        }

        @Bean
        static IdempotentMethodsCheck leaseholdIdempotentMethodsCheck(ListableBeanFactory beans) {
            return new IdempotentMethodsCheck(beans);
        }

        @Bean
        @Role(BeanDefinition.ROLE_INFRASTRUCTURE)
        static Advisor leaseholdIdempotentAdvisor(
                ObjectProvider<IdempotentExecutor> executor,
                ObjectProvider<LeaseholdProperties> properties,
                ObjectProvider<LeaseholdMetrics> metrics,
                ObjectProvider<DataSource> dataSource,
                ObjectProvider<LeaseholdObservations> observations,
                ListableBeanFactory beans) {
            LazyInterceptor<IdempotentInterceptor> interceptor = new LazyInterceptor<>(() -> new IdempotentInterceptor(
                    new IdempotentServices(executor, properties, dataSource, beans),
                    properties.getObject(),
                    outcome -> {
                        LeaseholdMetrics m = metrics.getIfAvailable();
                        if (m != null) {
                            m.idempotency(outcome);
                        }
                    },
                    observations.getIfAvailable(() -> new LeaseholdObservations(ObservationRegistry.NOOP))));
            DefaultPointcutAdvisor advisor = new DefaultPointcutAdvisor(
                    AnnotationMatchingPointcut.forMethodAnnotation(Idempotent.class), interceptor);
            advisor.setOrder(IDEMPOTENT_ORDER);
            return advisor;
        }
    }

    /** Problem responses for Spring MVC applications. */
    @Configuration(proxyBeanMethods = false)
    @ConditionalOnWebApplication(type = ConditionalOnWebApplication.Type.SERVLET)
    @ConditionalOnClass(name = "org.springframework.web.servlet.DispatcherServlet")
    static class WebConfiguration {

        @Bean
        @ConditionalOnMissingBean
        LeaseholdProblemHandler leaseholdProblemHandler() {
            return new LeaseholdProblemHandler();
        }

        /** The request bodies of @Idempotent handlers as received, for their fingerprints. */
        @Bean
        @ConditionalOnClass(name = "dev.leasehold.idempotency.IdempotentExecutor")
        IdempotentRequestBodies leaseholdIdempotentRequestBodies(LeaseholdProperties properties) {
            return new IdempotentRequestBodies(properties);
        }
    }

    /** Actuator endpoints. */
    @Configuration(proxyBeanMethods = false)
    @ConditionalOnClass(Endpoint.class)
    static class EndpointConfiguration {

        @Bean
        @ConditionalOnMissingBean
        LeaseholdEndpoint leaseholdEndpoint(
                LockService locks,
                LeaseStore store,
                LockModeSwitch mode,
                LeaseholdProperties properties,
                ApplicationEventPublisher events) {
            return new LeaseholdEndpoint(locks, store, mode, new AdminGuard(properties, new AdminAudit(events)));
        }

        @Bean
        @ConditionalOnMissingBean
        LeaseholdModeEndpoint leaseholdModeEndpoint(
                LockModeSwitch mode, LeaseholdProperties properties, ApplicationEventPublisher events) {
            return new LeaseholdModeEndpoint(mode, new AdminGuard(properties, new AdminAudit(events)));
        }
    }

    @Bean
    @ConditionalOnMissingBean
    ScheduledTaskLock leaseholdScheduledTaskLock(LeaseStore store) {
        return new ScheduledTaskLock(store);
    }

    @Bean
    @Role(BeanDefinition.ROLE_INFRASTRUCTURE)
    static Advisor leaseholdScheduledLockAdvisor(ObjectProvider<ScheduledTaskLock> lock) {
        DefaultPointcutAdvisor advisor = new DefaultPointcutAdvisor(
                AnnotationMatchingPointcut.forMethodAnnotation(ScheduledLock.class),
                new ScheduledLockInterceptor(lock::getObject));
        advisor.setOrder(LOCKED_ORDER);
        return advisor;
    }

    /** A Spring Integration lock registry on Leasehold's leases, unless the application has one. */
    @Configuration(proxyBeanMethods = false)
    @ConditionalOnClass(name = "org.springframework.integration.support.locks.LockRegistry")
    static class IntegrationConfiguration {

        @Bean
        @ConditionalOnMissingBean(type = "org.springframework.integration.support.locks.LockRegistry")
        LeaseholdLockRegistry leaseholdLockRegistry(LockService locks, LeaseholdProperties properties) {
            return new LeaseholdLockRegistry(
                    locks, "integration", properties.getLock().getLeaseTime());
        }
    }

    /** The lease-store health indicator, with Spring Boot's health module. */
    @Configuration(proxyBeanMethods = false)
    @ConditionalOnClass(name = "org.springframework.boot.health.contributor.HealthIndicator")
    @ConditionalOnProperty(prefix = "management.health.leasehold", name = "enabled", matchIfMissing = true)
    static class HealthConfiguration {

        @Bean(name = "leaseholdHealthIndicator")
        @ConditionalOnMissingBean(name = "leaseholdHealthIndicator")
        LeaseStoreHealthIndicator leaseholdHealthIndicator(LeaseStore store, LeaseholdProperties properties) {
            return new LeaseStoreHealthIndicator(store, properties.getHealth().getTimeout());
        }
    }
}
