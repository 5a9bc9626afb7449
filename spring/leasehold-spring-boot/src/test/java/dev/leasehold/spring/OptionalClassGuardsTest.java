package dev.leasehold.spring;

import static org.assertj.core.api.Assertions.assertThat;

import dev.leasehold.spring.actuator.LeaseStoreHealthIndicator;
import dev.leasehold.spring.actuator.LeaseholdEndpoint;
import dev.leasehold.spring.actuator.LeaseholdMetrics;
import dev.leasehold.spring.retry.DelayedRetries;
import dev.leasehold.spring.retry.JdbcRetryQueue;
import dev.leasehold.spring.retry.RabbitRetryQueue;
import dev.leasehold.spring.schema.LeaseholdFlywayMigration;
import dev.leasehold.spring.schema.LeaseholdScriptInitializer;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import org.junit.jupiter.api.Test;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.autoconfigure.aop.AopAutoConfiguration;
import org.springframework.boot.jdbc.autoconfigure.DataSourceAutoConfiguration;
import org.springframework.boot.test.context.FilteredClassLoader;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;

/** Each optional library missing from the class path: its beans back off, the rest still starts. */
class OptionalClassGuardsTest {

    private final ApplicationContextRunner h2 = new ApplicationContextRunner()
            .withConfiguration(AutoConfigurations.of(
                    LeaseholdAutoConfigurations.with(DataSourceAutoConfiguration.class, AopAutoConfiguration.class)))
            .withPropertyValues(
                    "spring.datasource.url=jdbc:h2:mem:guards-" + System.nanoTime() + ";DB_CLOSE_DELAY=-1",
                    "leasehold.stale-scan.enabled=false");

    @Test
    void withoutSpringAmqpTheDatabaseQueueIsUsed() {
        h2.withClassLoader(new FilteredClassLoader("org.springframework.amqp"))
                .withPropertyValues("leasehold.retry.queue=rabbit")
                .run(context -> {
                    assertThat(context).hasNotFailed();
                    assertThat(context).doesNotHaveBean(RabbitRetryQueue.class).doesNotHaveBean(JdbcRetryQueue.class);
                });
        h2.withClassLoader(new FilteredClassLoader("org.springframework.amqp"))
                .run(context -> assertThat(context).hasSingleBean(JdbcRetryQueue.class));
    }

    @Test
    void withoutFlywayTheScriptInitializerIsUsed() {
        h2.withClassLoader(new FilteredClassLoader("org.flywaydb")).run(context -> assertThat(context)
                .hasSingleBean(LeaseholdScriptInitializer.class)
                .doesNotHaveBean(LeaseholdFlywayMigration.class));
    }

    @Test
    void withoutTheHealthModuleThereIsNoHealthIndicator() {
        h2.withClassLoader(new FilteredClassLoader("org.springframework.boot.health"))
                .run(context -> {
                    assertThat(context).hasNotFailed();
                    assertThat(context).doesNotHaveBean(LeaseStoreHealthIndicator.class);
                });
        h2.run(context -> assertThat(context).hasSingleBean(LeaseStoreHealthIndicator.class));
    }

    @Test
    void withoutActuatorThereAreNoEndpoints() {
        h2.withClassLoader(new FilteredClassLoader("org.springframework.boot.actuate"))
                .run(context -> {
                    assertThat(context).hasNotFailed();
                    assertThat(context).doesNotHaveBean(LeaseholdEndpoint.class);
                });
    }

    @Test
    void withoutMicrometerThereAreNoMeters() {
        h2.withClassLoader(new FilteredClassLoader("io.micrometer.core"))
                .withBean(MeterRegistry.class, SimpleMeterRegistry::new)
                .run(context -> {
                    assertThat(context).hasNotFailed();
                    assertThat(context).doesNotHaveBean(LeaseholdMetrics.class);
                });
    }

    @Test
    void withoutJackson2DelayedRetriesAndIdempotencyUseJackson3() {
        h2.withClassLoader(new FilteredClassLoader("com.fasterxml.jackson.databind"))
                .withPropertyValues("leasehold.retry.enabled=true")
                .run(context -> {
                    assertThat(context).hasNotFailed();
                    assertThat(context)
                            .hasSingleBean(DelayedRetries.class)
                            .hasSingleBean(dev.leasehold.idempotency.SideEffects.class)
                            .hasBean("leaseholdIdempotencyPurge");
                });
    }

    @Test
    void withoutAnyJacksonThereAreNoDelayedRetriesNorIdempotency() {
        h2.withClassLoader(new FilteredClassLoader("com.fasterxml.jackson.databind", "tools.jackson.databind"))
                .run(context -> {
                    assertThat(context).hasNotFailed();
                    assertThat(context)
                            .doesNotHaveBean(DelayedRetries.class)
                            .doesNotHaveBean(dev.leasehold.idempotency.SideEffects.class);
                });
    }

    @Test
    void withoutTheSqlModulesLeasesComeFromRedisOrMemoryOnly() {
        h2.withClassLoader(new FilteredClassLoader("dev.leasehold.jdbc", "dev.leasehold.idempotency"))
                .withPropertyValues("leasehold.backend=memory")
                .run(context -> {
                    assertThat(context).hasNotFailed();
                    assertThat(context)
                            .doesNotHaveBean(LeaseholdFlywayMigration.class)
                            .doesNotHaveBean(JdbcRetryQueue.class);
                });
    }
}
