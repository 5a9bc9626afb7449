package dev.leasehold.spring.lock;

import static org.assertj.core.api.Assertions.assertThat;

import ch.qos.logback.classic.Level;
import ch.qos.logback.classic.Logger;
import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.core.read.ListAppender;
import dev.leasehold.spring.LeaseholdAutoConfigurations;
import dev.leasehold.spring.internal.LazyInterceptor;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import org.junit.jupiter.api.Test;
import org.slf4j.LoggerFactory;
import org.springframework.aop.Advisor;
import org.springframework.aop.support.DefaultPointcutAdvisor;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.autoconfigure.aop.AopAutoConfiguration;
import org.springframework.boot.jdbc.autoconfigure.DataSourceAutoConfiguration;
import org.springframework.boot.jdbc.autoconfigure.DataSourceTransactionManagerAutoConfiguration;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.boot.transaction.autoconfigure.TransactionAutoConfiguration;
import org.springframework.context.annotation.Configuration;
import org.springframework.core.Ordered;
import org.springframework.jdbc.datasource.DataSourceTransactionManager;
import org.springframework.jdbc.datasource.DriverManagerDataSource;
import org.springframework.transaction.PlatformTransactionManager;
import org.springframework.transaction.TransactionDefinition;
import org.springframework.transaction.TransactionStatus;
import org.springframework.transaction.annotation.EnableTransactionManagement;
import org.springframework.transaction.annotation.Transactional;
import reactor.core.publisher.Mono;

/** What Leasehold refuses at startup rather than running unprotected. */
class StartupChecksTest {

    private final ApplicationContextRunner memory = new ApplicationContextRunner()
            .withConfiguration(AutoConfigurations.of(LeaseholdAutoConfigurations.with(AopAutoConfiguration.class)))
            .withPropertyValues("leasehold.backend=memory", "leasehold.stale-scan.enabled=false");

    /** Asynchronous results: the lease would end before the work does. */
    public static class AsyncJobs {
        @Locked(namespace = "async", key = "#id")
        public CompletableFuture<String> future(String id) {
            return CompletableFuture.supplyAsync(() -> id);
        }

        @Locked(namespace = "async", key = "#id")
        public Mono<String> mono(String id) {
            return Mono.just(id);
        }
    }

    /** RETRY_LATER on a method with a result. */
    public static class ValuedRetry {
        @Locked(namespace = "valued", key = "#id", onBusy = Locked.OnBusy.RETRY_LATER)
        public int count(String id) {
            return 1;
        }
    }

    @Test
    void asyncReturnTypesAreRefusedAtStartupNamingTheMethod() {
        memory.withBean(AsyncJobs.class).run(context -> {
            assertThat(context).hasFailed();
            assertThat(context.getStartupFailure())
                    .hasMessageContaining("AsyncJobs.future returns CompletableFuture")
                    .hasMessageContaining("AsyncJobs.mono returns Mono")
                    .hasMessageContaining("before asynchronous work runs");
        });
    }

    @Test
    void retryLaterOnAMethodWithAResultIsRefusedAtStartup() {
        memory.withBean(ValuedRetry.class).run(context -> {
            assertThat(context).hasFailed();
            assertThat(context.getStartupFailure()).hasMessageContaining("ValuedRetry.count returns int");
        });
    }

    /** A transactional, locked service. */
    public static class Payments {
        @Locked(namespace = "pay", key = "#id")
        @Transactional
        public void pay(String id) {}
    }

    /** Transactions ordered before every other advice: outside @Locked. */
    @Configuration(proxyBeanMethods = false)
    @EnableTransactionManagement(order = Ordered.HIGHEST_PRECEDENCE)
    static class EarlyTransactions {}

    /** A transaction manager decorator: not a {@code ConfigurableTransactionManager}, so it takes no listeners. */
    static final class TimedTransactions implements PlatformTransactionManager {
        private final PlatformTransactionManager delegate = jdbcTransactions();

        @Override
        public TransactionStatus getTransaction(TransactionDefinition definition) {
            return delegate.getTransaction(definition);
        }

        @Override
        public void commit(TransactionStatus status) {
            delegate.commit(status);
        }

        @Override
        public void rollback(TransactionStatus status) {
            delegate.rollback(status);
        }
    }

    static PlatformTransactionManager jdbcTransactions() {
        return new DataSourceTransactionManager(new DriverManagerDataSource("jdbc:h2:mem:tm-" + System.nanoTime()));
    }

    @Test
    void aTransactionManagerBeanThatTakesNoListenersIsNamedInAWarning() {
        ListAppender<ILoggingEvent> logged = new ListAppender<>();
        Logger logger = (Logger) LoggerFactory.getLogger(LockedCommitCheck.class);
        logged.start();
        logger.addAppender(logged);
        try {
            memory.withBean("timedTransactions", PlatformTransactionManager.class, TimedTransactions::new)
                    .withBean(
                            "plainTransactions", PlatformTransactionManager.class, StartupChecksTest::jdbcTransactions)
                    .run(context -> {
                        assertThat(context).hasNotFailed();
                        List<String> warnings = logged.list.stream()
                                .filter(event -> event.getLevel() == Level.WARN)
                                .map(ILoggingEvent::getFormattedMessage)
                                .toList();
                        assertThat(warnings)
                                .singleElement()
                                .asString()
                                .contains("'timedTransactions'")
                                .contains("not checked for a lost lease");
                    });
        } finally {
            logger.detachAppender(logged);
        }
    }

    private ApplicationContextRunner withTransactions() {
        return memory.withConfiguration(AutoConfigurations.of(
                        DataSourceAutoConfiguration.class,
                        DataSourceTransactionManagerAutoConfiguration.class,
                        TransactionAutoConfiguration.class))
                .withPropertyValues("spring.datasource.url=jdbc:h2:mem:order-" + System.nanoTime())
                .withBean(Payments.class);
    }

    @Test
    void aTransactionAdvisorOutsideLockedIsRefusedAtStartup() {
        withTransactions().withUserConfiguration(EarlyTransactions.class).run(context -> {
            assertThat(context).hasFailed();
            assertThat(context.getStartupFailure())
                    .hasMessageContaining("transaction advisor")
                    .hasMessageContaining("leasehold.lock.advisor-order");
        });
    }

    @Test
    void bootsDefaultTransactionOrderPassesAndTheAdvisorOrderIsConfigurable() {
        withTransactions().run(context -> assertThat(context).hasNotFailed());
        withTransactions().withPropertyValues("leasehold.lock.advisor-order=-5").run(context -> {
            assertThat(context).hasNotFailed();
            assertThat(context.getBeansOfType(Advisor.class).values())
                    .filteredOn(
                            a -> a instanceof DefaultPointcutAdvisor d && d.getAdvice() instanceof LazyInterceptor<?>)
                    .extracting(a -> ((Ordered) a).getOrder())
                    .contains(-5);
        });
    }

    @Test
    void badSettingsFailStartupNamingTheProperty() {
        memory.withPropertyValues("leasehold.lock.lease-time=0s", "leasehold.retry.max-attempts=0")
                .run(context -> {
                    assertThat(context).hasFailed();
                    assertThat(context.getStartupFailure())
                            .hasStackTraceContaining("leasehold.lock.lease-time must be > 0, was PT0S")
                            .hasStackTraceContaining("leasehold.retry.max-attempts must be >= 1, was 0");
                });
    }
}
