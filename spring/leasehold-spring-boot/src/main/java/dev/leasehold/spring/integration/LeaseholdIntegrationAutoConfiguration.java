package dev.leasehold.spring.integration;

import dev.leasehold.LockService;
import dev.leasehold.spring.LeaseholdAutoConfiguration;
import dev.leasehold.spring.LeaseholdProperties;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.context.annotation.Bean;

/** A Spring Integration lock registry on Leasehold's leases, unless the application has one. */
@AutoConfiguration(
        after = LeaseholdAutoConfiguration.class,
        afterName = "dev.leasehold.spring.scheduling.LeaseholdSchedulingAutoConfiguration")
@ConditionalOnClass(name = "org.springframework.integration.support.locks.LockRegistry")
public class LeaseholdIntegrationAutoConfiguration {

    @Bean
    @ConditionalOnMissingBean(type = "org.springframework.integration.support.locks.LockRegistry")
    LeaseholdLockRegistry leaseholdLockRegistry(LockService locks, LeaseholdProperties properties) {
        return new LeaseholdLockRegistry(
                locks, "integration", properties.getLock().getLeaseTime());
    }
}
