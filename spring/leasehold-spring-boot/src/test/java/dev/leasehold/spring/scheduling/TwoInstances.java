package dev.leasehold.spring.scheduling;

import dev.leasehold.spring.LeaseholdAutoConfigurations;
import dev.leasehold.testkit.TestServices;
import java.util.UUID;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.autoconfigure.aop.AopAutoConfiguration;
import org.springframework.boot.test.context.assertj.AssertableApplicationContext;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;

/** Two application contexts (two "instances") sharing one real Redis under a key prefix of their own. */
final class TwoInstances {

    private TwoInstances() {}

    static void run(Class<?> bean, TwoContexts test) {
        String prefix = "lh-test-" + UUID.randomUUID() + ":";
        ApplicationContextRunner instance = new ApplicationContextRunner()
                .withConfiguration(AutoConfigurations.of(LeaseholdAutoConfigurations.with(AopAutoConfiguration.class)))
                .withPropertyValues(
                        "leasehold.backend=redis",
                        "leasehold.redis.url=" + TestServices.redis().uri(),
                        "leasehold.redis.key-prefix=" + prefix,
                        "leasehold.stale-scan.enabled=false")
                .withBean(bean);
        instance.run(a -> instance.run(b -> test.accept(a, b)));
    }

    /** A test over both contexts. */
    interface TwoContexts {
        void accept(AssertableApplicationContext a, AssertableApplicationContext b) throws Exception;
    }
}
