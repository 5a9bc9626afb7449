package dev.leasehold.spring.scheduling;

import dev.leasehold.spi.LeaseStore;
import dev.leasehold.spring.LeaseholdAutoConfiguration;
import org.springframework.aop.Advisor;
import org.springframework.aop.support.DefaultPointcutAdvisor;
import org.springframework.aop.support.annotation.AnnotationMatchingPointcut;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.beans.factory.config.BeanDefinition;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Role;

/** {@link ScheduledLock} tasks: one run per schedule across instances, on the lease store. */
@AutoConfiguration(
        after = LeaseholdAutoConfiguration.class,
        afterName = "dev.leasehold.spring.lock.LeaseholdLockAutoConfiguration")
public class LeaseholdSchedulingAutoConfiguration {

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
        advisor.setOrder(LeaseholdAutoConfiguration.LOCKED_ORDER);
        return advisor;
    }
}
