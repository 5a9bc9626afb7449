package dev.leasehold.spring.web;

import dev.leasehold.LockService;
import dev.leasehold.idempotency.IdempotentExecutor;
import dev.leasehold.idempotency.RequestRecords;
import dev.leasehold.idempotency.SideEffects;
import dev.leasehold.spring.LeaseholdAutoConfiguration;
import dev.leasehold.spring.LeaseholdIdempotencyProperties;
import dev.leasehold.spring.LeaseholdProperties;
import dev.leasehold.spring.actuator.LeaseholdMetrics;
import dev.leasehold.spring.actuator.LeaseholdObservations;
import dev.leasehold.spring.internal.JacksonCondition;
import dev.leasehold.spring.internal.LazyInterceptor;
import dev.leasehold.spring.internal.LeaseholdJson;
import dev.leasehold.spring.internal.Schedulers;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.observation.ObservationRegistry;
import javax.sql.DataSource;
import org.springframework.aop.Advisor;
import org.springframework.aop.support.DefaultPointcutAdvisor;
import org.springframework.aop.support.annotation.AnnotationMatchingPointcut;
import org.springframework.beans.factory.ListableBeanFactory;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.beans.factory.SmartInitializingSingleton;
import org.springframework.beans.factory.config.BeanDefinition;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnProperty;
import org.springframework.boot.autoconfigure.condition.ConditionalOnWebApplication;
import org.springframework.boot.sql.init.dependency.DependsOnDatabaseInitialization;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Conditional;
import org.springframework.context.annotation.Configuration;
import org.springframework.context.annotation.Role;
import org.springframework.scheduling.TaskScheduler;

/**
 * {@link Idempotent} methods and Leasehold in Spring MVC: request and side-effect records, the
 * interceptor (outermost, before the lock) and the purge, when there is a DataSource, the
 * idempotency module, Spring JDBC (for the transaction) and Jackson (3, or 2); in a servlet web
 * application, problem responses and the request bodies of {@code @Idempotent} handlers.
 */
@AutoConfiguration(
        after = LeaseholdAutoConfiguration.class,
        afterName = "dev.leasehold.spring.actuator.LeaseholdActuatorAutoConfiguration")
public class LeaseholdWebAutoConfiguration {

    /** Request and side-effect records, the {@link Idempotent} interceptor and the purge. */
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
            LeaseholdIdempotencyProperties settings = properties.getIdempotency();
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
                RequestRecords records, LeaseholdProperties properties, ObjectProvider<TaskScheduler> schedulers) {
            return new IdempotencyPurge(
                    records,
                    properties.getIdempotency().getPurge(),
                    () -> Schedulers.ownOrShared(schedulers, "leasehold-purge-"));
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
            advisor.setOrder(LeaseholdAutoConfiguration.IDEMPOTENT_ORDER);
            return advisor;
        }

        /** The purge's gauges and counter, once every bean is there, when there is a meter registry. */
        @Configuration(proxyBeanMethods = false)
        @ConditionalOnClass(MeterRegistry.class)
        @ConditionalOnBean(MeterRegistry.class)
        static class PurgeMetersConfiguration {

            @Bean
            SmartInitializingSingleton leaseholdIdempotencyPurgeMeters(
                    ObjectProvider<IdempotencyPurge> purge, MeterRegistry registry) {
                return () -> purge.ifAvailable(p -> IdempotencyPurgeMeters.bind(p, registry));
            }
        }
    }

    /** Problem responses for Spring MVC applications. */
    @Configuration(proxyBeanMethods = false)
    @ConditionalOnWebApplication(type = ConditionalOnWebApplication.Type.SERVLET)
    @ConditionalOnClass(name = "org.springframework.web.servlet.DispatcherServlet")
    static class MvcConfiguration {

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
}
