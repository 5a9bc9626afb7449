package dev.leasehold.spring.actuator;

import dev.leasehold.LockService;
import dev.leasehold.spi.LeaseStore;
import dev.leasehold.spring.LeaseholdAutoConfiguration;
import dev.leasehold.spring.LeaseholdProperties;
import dev.leasehold.spring.lock.LockModeSwitch;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.observation.ObservationRegistry;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.boot.actuate.endpoint.annotation.Endpoint;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnProperty;
import org.springframework.context.ApplicationEventPublisher;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;

/**
 * Watching and operating Leasehold: observations, the audit log, Micrometer meters (when there is a
 * registry), the {@code leasehold} and {@code leaseholdmode} Actuator endpoints behind one {@link
 * AdminGuard}, and the lease-store health indicator.
 */
@AutoConfiguration(
        after = LeaseholdAutoConfiguration.class,
        afterName = "dev.leasehold.spring.retry.LeaseholdRetryAutoConfiguration")
public class LeaseholdActuatorAutoConfiguration {

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
    }

    /** Actuator endpoints; their write operations pass one admin guard. */
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
