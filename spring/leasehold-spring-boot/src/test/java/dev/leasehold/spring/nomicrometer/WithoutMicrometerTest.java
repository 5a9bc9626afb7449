package dev.leasehold.spring.nomicrometer;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.leasehold.LockService;
import dev.leasehold.idempotency.IdempotentExecutor;
import dev.leasehold.spring.LeaseholdAutoConfigurations;
import org.junit.jupiter.api.Test;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.autoconfigure.aop.AopAutoConfiguration;
import org.springframework.boot.jdbc.autoconfigure.DataSourceAutoConfiguration;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;

/**
 * A stock application without Micrometer (no actuator): the starter still starts, idempotency and
 * its purge included. Runs in its own surefire execution whose class path has no
 * {@code micrometer-core} at all (see this module's POM); a filtering class loader would not show
 * it, because the auto-configuration's classes are then loaded where Micrometer is present.
 */
class WithoutMicrometerTest {

    @Test
    void theStarterStartsWithIdempotencyWhenMicrometerIsNotOnTheClassPath() {
        assertThatThrownBy(() -> Class.forName("io.micrometer.core.instrument.MeterRegistry"))
                .as("this test's class path must not hold micrometer-core")
                .isInstanceOf(ClassNotFoundException.class);
        new ApplicationContextRunner()
                .withConfiguration(AutoConfigurations.of(LeaseholdAutoConfigurations.with(
                        DataSourceAutoConfiguration.class, AopAutoConfiguration.class)))
                .withPropertyValues(
                        "spring.datasource.url=jdbc:h2:mem:no-micrometer-" + System.nanoTime() + ";DB_CLOSE_DELAY=-1",
                        "leasehold.stale-scan.enabled=false")
                .run(context -> {
                    assertThat(context).hasNotFailed();
                    assertThat(context).hasSingleBean(LockService.class).hasSingleBean(IdempotentExecutor.class);
                    assertThat(context.getBeanNamesForType(Class.forName("dev.leasehold.spring.web.IdempotencyPurge")))
                            .hasSize(1);
                });
    }
}
