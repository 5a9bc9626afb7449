package dev.leasehold.spring.lock;

import dev.leasehold.LockService;
import dev.leasehold.spring.LeaseholdAutoConfiguration;
import dev.leasehold.spring.LeaseholdProperties;
import dev.leasehold.spring.actuator.LeaseholdMetrics;
import dev.leasehold.spring.actuator.LeaseholdObservations;
import dev.leasehold.spring.internal.LazyInterceptor;
import dev.leasehold.spring.retry.DelayedRetries;
import io.micrometer.observation.ObservationRegistry;
import org.springframework.aop.Advisor;
import org.springframework.aop.support.DefaultPointcutAdvisor;
import org.springframework.aop.support.annotation.AnnotationMatchingPointcut;
import org.springframework.beans.factory.ListableBeanFactory;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.beans.factory.config.BeanDefinition;
import org.springframework.beans.factory.config.BeanPostProcessor;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnProperty;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.context.annotation.Role;
import org.springframework.core.env.Environment;

/**
 * {@link Locked} methods: the interceptor (ordered before the transaction interceptor), the lease
 * check before commit, the startup checks of the annotated methods and their expressions, the
 * degrade switch ({@link LockModeSwitch}) and the stale-lease scan.
 */
@AutoConfiguration(
        after = LeaseholdAutoConfiguration.class,
        afterName = "dev.leasehold.spring.web.LeaseholdWebAutoConfiguration")
public class LeaseholdLockAutoConfiguration {

    @Bean
    @ConditionalOnMissingBean
    LockModeSwitch leaseholdLockMode(LeaseholdProperties properties) {
        return new LockModeSwitch(properties.getLock().getMode());
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
        static BeanPostProcessor leaseholdLockedCommitCheck() {
            return new BeanPostProcessor() {
                @Override
                public Object postProcessAfterInitialization(Object bean, String beanName) {
                    return LockedCommitCheck.addTo(bean, beanName);
                }
            };
        }
    }

    private static int lockedOrder(Environment environment) {
        return environment.getProperty(
                "leasehold.lock.advisor-order", Integer.class, LeaseholdAutoConfiguration.LOCKED_ORDER);
    }

    @Bean
    static LockedMethodsCheck leaseholdLockedMethodsCheck(ListableBeanFactory beans, Environment environment) {
        return new LockedMethodsCheck(beans, lockedOrder(environment));
    }

    @Bean
    static ExpressionsCheck leaseholdExpressionsCheck(ListableBeanFactory beans) {
        return new ExpressionsCheck(beans);
    }
}
