package dev.leasehold.spring.retry;

import static org.assertj.core.api.Assertions.assertThat;

import dev.leasehold.spring.LeaseholdAutoConfigurations;
import dev.leasehold.spring.lock.Locked;
import java.time.Duration;
import org.flywaydb.core.Flyway;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.autoconfigure.aop.AopAutoConfiguration;
import org.springframework.boot.jdbc.autoconfigure.DataSourceAutoConfiguration;
import org.springframework.boot.test.context.FilteredClassLoader;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.boot.test.system.CapturedOutput;
import org.springframework.boot.test.system.OutputCaptureExtension;

/** When delayed retries poll, and which queue they use. */
@ExtendWith(OutputCaptureExtension.class)
class RetryActivationTest {

    private final ApplicationContextRunner h2 = new ApplicationContextRunner()
            .withConfiguration(AutoConfigurations.of(
                    LeaseholdAutoConfigurations.with(DataSourceAutoConfiguration.class, AopAutoConfiguration.class)))
            .withPropertyValues(
                    "spring.datasource.url=jdbc:h2:mem:retry-" + System.nanoTime() + ";DB_CLOSE_DELAY=-1",
                    "leasehold.stale-scan.enabled=false");

    /** A background job that defers when its key is busy. */
    public static class Interest {
        @Locked(namespace = "interest", key = "#id", onBusy = Locked.OnBusy.RETRY_LATER)
        public void accrue(String id) {}
    }

    @Test
    void withoutARetryLaterMethodTheDatabaseQueueNeverPolls() {
        h2.run(context -> {
            assertThat(context).hasSingleBean(DelayedRetries.class);
            assertThat(context.getBean(DelayedRetries.class).isRunning()).isFalse();
            assertThat(context.getBean(JdbcRetryQueue.class).isStarted()).isFalse();
        });
    }

    @Test
    void aRetryLaterMethodStartsDelivery() {
        h2.withBean(Interest.class).run(context -> {
            assertThat(context.getBean(DelayedRetries.class).isRunning()).isTrue();
            assertThat(context.getBean(JdbcRetryQueue.class).isStarted()).isTrue();
        });
    }

    @Test
    void enabledTrueDeliversWithoutRetryLaterMethodsAndFalseConfiguresNothing() {
        h2.withPropertyValues("leasehold.retry.enabled=true")
                .run(context -> assertThat(context.getBean(JdbcRetryQueue.class).isStarted())
                        .isTrue());
        h2.withPropertyValues("leasehold.retry.enabled=false").run(context -> assertThat(context)
                .doesNotHaveBean(DelayedRetries.class)
                .doesNotHaveBean(RetryQueue.class));
    }

    private static ApplicationContextRunner withoutFlyway(String[] database) {
        return new ApplicationContextRunner()
                .withConfiguration(AutoConfigurations.of(LeaseholdAutoConfigurations.with(
                        DataSourceAutoConfiguration.class, AopAutoConfiguration.class)))
                .withClassLoader(new FilteredClassLoader(Flyway.class))
                .withPropertyValues(database);
    }

    @Test
    void onPostgresWithoutTheRetryTableThereIsNoWarningLoop(CapturedOutput output) {
        dev.leasehold.spring.schema.TestDatabaseAccess.onFreshPostgres(postgres -> withoutFlyway(postgres)
                .withPropertyValues("leasehold.stale-scan.enabled=false", "leasehold.retry.poll-interval=100ms")
                .run(context -> {
                    assertThat(context).hasNotFailed();
                    assertThat(context.getBean(JdbcRetryQueue.class).isStarted())
                            .isFalse();
                }));
        assertThat(output).doesNotContain("leasehold_retry");
    }

    @Test
    void aRetryLaterMethodWithoutTheRetryTableFailsAtStartupNamingIt() {
        dev.leasehold.spring.schema.TestDatabaseAccess.onFreshPostgres(postgres -> withoutFlyway(postgres)
                .withPropertyValues("leasehold.stale-scan.enabled=false")
                .withBean(Interest.class)
                .run(context -> {
                    assertThat(context).hasFailed();
                    assertThat(context.getStartupFailure()).rootCause().hasMessageContaining("leasehold_retry");
                    assertThat(context.getStartupFailure()).hasStackTraceContaining("initialize-schema=always");
                }));
    }

    @Test
    void anApplicationRetryQueueReplacesTheDatabaseOne() {
        RetryQueue mine = new RetryQueue() {
            @Override
            public boolean enqueue(RetryTask task, Duration delay) {
                return true;
            }

            @Override
            public void park(RetryTask task, String error) {}

            @Override
            public void start(RetryHandler handler) {}

            @Override
            public void stop() {}

            @Override
            public String name() {
                return "mine";
            }
        };
        h2.withBean(RetryQueue.class, () -> mine).run(context -> {
            assertThat(context).doesNotHaveBean(JdbcRetryQueue.class);
            assertThat(context.getBean(DelayedRetries.class).queue()).isSameAs(mine);
        });
    }
}
