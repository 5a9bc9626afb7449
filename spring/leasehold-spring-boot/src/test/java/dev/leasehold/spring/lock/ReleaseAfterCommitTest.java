package dev.leasehold.spring.lock;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.springframework.test.web.servlet.request.MockMvcRequestBuilders.post;

import ch.qos.logback.classic.Level;
import ch.qos.logback.classic.Logger;
import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.core.read.ListAppender;
import dev.leasehold.LeaseInfo;
import dev.leasehold.LeaseStoreException;
import dev.leasehold.LockKey;
import dev.leasehold.memory.InMemoryLeaseStore;
import dev.leasehold.spi.AcquireResult;
import dev.leasehold.spi.Grant;
import dev.leasehold.spi.LeaseStore;
import dev.leasehold.spring.LeaseholdAutoConfigurations;
import dev.leasehold.spring.actuator.LeaseholdMetricNames;
import dev.leasehold.spring.web.LeaseholdProblemHandler;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.time.Duration;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.slf4j.LoggerFactory;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.autoconfigure.aop.AopAutoConfiguration;
import org.springframework.boot.jdbc.autoconfigure.DataSourceAutoConfiguration;
import org.springframework.boot.jdbc.autoconfigure.DataSourceTransactionManagerAutoConfiguration;
import org.springframework.boot.jdbc.autoconfigure.JdbcTemplateAutoConfiguration;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.boot.transaction.autoconfigure.TransactionAutoConfiguration;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.test.web.servlet.MockMvc;
import org.springframework.test.web.servlet.MvcResult;
import org.springframework.test.web.servlet.setup.MockMvcBuilders;
import org.springframework.transaction.annotation.Transactional;
import org.springframework.web.bind.annotation.PathVariable;
import org.springframework.web.bind.annotation.PostMapping;
import org.springframework.web.bind.annotation.RestController;

/**
 * The lease release of a {@code @Locked} method fails after its transaction committed (the store
 * stopped answering after the grant): the work is done, so the caller gets the method's result,
 * never a problem that says nothing was changed; the lease ends at its expiry in the store, and
 * the failure is logged once with its cause and counted. A method that failed keeps its own
 * exception.
 */
class ReleaseAfterCommitTest {

    private static final LockKey ACCOUNT = LockKey.of("ledger", "A1");
    private static final String CAUSE = "release reply lost";

    private final ReleaseFailingStore store = new ReleaseFailingStore();
    private final SimpleMeterRegistry meters = new SimpleMeterRegistry();
    private final ListAppender<ILoggingEvent> logged = new ListAppender<>();
    private final Logger root = (Logger) LoggerFactory.getLogger(org.slf4j.Logger.ROOT_LOGGER_NAME);

    private final ApplicationContextRunner app = new ApplicationContextRunner()
            .withConfiguration(AutoConfigurations.of(LeaseholdAutoConfigurations.with(
                    AopAutoConfiguration.class,
                    DataSourceAutoConfiguration.class,
                    DataSourceTransactionManagerAutoConfiguration.class,
                    TransactionAutoConfiguration.class,
                    JdbcTemplateAutoConfiguration.class)))
            .withPropertyValues(
                    "spring.datasource.url=jdbc:h2:mem:release-" + System.nanoTime() + ";DB_CLOSE_DELAY=-1",
                    "leasehold.stale-scan.enabled=false")
            .withBean(LeaseStore.class, () -> store)
            .withBean(MeterRegistry.class, () -> meters)
            .withBean(Ledger.class);

    @BeforeEach
    void captureLogs() {
        logged.start();
        root.addAppender(logged);
    }

    @AfterEach
    void stopCapturing() {
        root.detachAppender(logged);
    }

    @Test
    void aReleaseFailureAfterTheCommitAnswersTheResultNotNothingWasChanged() {
        app.run(context -> {
            JdbcTemplate jdbc = openAccount(context.getBean(JdbcTemplate.class), 0);
            MockMvc mvc = MockMvcBuilders.standaloneSetup(new Deposits(context.getBean(Ledger.class)))
                    .setControllerAdvice(new LeaseholdProblemHandler())
                    .build();
            store.releaseFails = true;

            MvcResult result = mvc.perform(post("/accounts/A1/deposits/100")).andReturn();

            assertThat(balance(jdbc)).as("the deposit committed").isEqualTo(100);
            assertThat(store.failedReleases.get())
                    .as("the release was tried and failed")
                    .isEqualTo(1);
            assertThat(result.getResponse().getContentAsString())
                    .as("answer to a committed deposit")
                    .doesNotContain("nothing was changed");
            assertThat(result.getResponse().getStatus()).isEqualTo(200);
            assertThat(result.getResponse().getContentAsString()).isEqualTo("100");
            assertThat(store.backend.inspect(ACCOUNT))
                    .as("the lease stays in the store until its expiry")
                    .isPresent();
            assertThat(meters.counter(
                                    LeaseholdMetricNames.LOCK_RELEASE_FAILURES,
                                    "namespace",
                                    "ledger",
                                    "backend",
                                    store.name())
                            .count())
                    .isEqualTo(1);
        });
        List<ILoggingEvent> reported = logged.list.stream()
                .filter(e -> e.getLevel().isGreaterOrEqual(Level.WARN))
                .filter(e ->
                        e.getThrowableProxy() != null || e.getFormattedMessage().contains(ACCOUNT.render()))
                .toList();
        assertThat(reported)
                .as("the release failure is logged once, naming the key, with its cause")
                .singleElement()
                .satisfies(e -> {
                    assertThat(e.getFormattedMessage()).contains(ACCOUNT.render());
                    assertThat(e.getThrowableProxy()).isNotNull();
                    assertThat(e.getThrowableProxy().getCause().getMessage()).isEqualTo(CAUSE);
                });
    }

    @Test
    void aMethodThatFailedKeepsItsOwnExceptionWhenTheReleaseFailsToo() {
        app.run(context -> {
            JdbcTemplate jdbc = openAccount(context.getBean(JdbcTemplate.class), 50);
            store.releaseFails = true;

            assertThatThrownBy(() -> context.getBean(Ledger.class).deposit("A1", -100))
                    .isInstanceOf(IllegalArgumentException.class)
                    .hasMessage("insufficient funds on A1");
            assertThat(balance(jdbc)).as("the failed withdrawal rolled back").isEqualTo(50);
            assertThat(store.failedReleases.get()).isEqualTo(1);
        });
    }

    private static JdbcTemplate openAccount(JdbcTemplate jdbc, long balance) {
        jdbc.execute("CREATE TABLE ledger_account (id VARCHAR(20) PRIMARY KEY, balance BIGINT NOT NULL)");
        jdbc.update("INSERT INTO ledger_account (id, balance) VALUES ('A1', ?)", balance);
        return jdbc;
    }

    private static long balance(JdbcTemplate jdbc) {
        return jdbc.queryForObject("SELECT balance FROM ledger_account WHERE id = 'A1'", Long.class);
    }

    /** A locked, transactional booking. */
    public static class Ledger {
        private final JdbcTemplate jdbc;

        public Ledger(JdbcTemplate jdbc) {
            this.jdbc = jdbc;
        }

        @Locked(namespace = "ledger", key = "#account")
        @Transactional
        public long deposit(String account, long amount) {
            jdbc.update("UPDATE ledger_account SET balance = balance + ? WHERE id = ?", amount, account);
            long balance = jdbc.queryForObject("SELECT balance FROM ledger_account WHERE id = ?", Long.class, account);
            if (balance < 0) {
                throw new IllegalArgumentException("insufficient funds on " + account);
            }
            return balance;
        }
    }

    @RestController
    static class Deposits {
        private final Ledger ledger;

        Deposits(Ledger ledger) {
            this.ledger = ledger;
        }

        @PostMapping("/accounts/{id}/deposits/{amount}")
        long deposit(@PathVariable String id, @PathVariable long amount) {
            return ledger.deposit(id, amount);
        }
    }

    /** Leases in memory; releases fail, once asked to, as a store that stopped answering after the grant. */
    static final class ReleaseFailingStore implements LeaseStore {
        final InMemoryLeaseStore backend = new InMemoryLeaseStore();
        final AtomicInteger failedReleases = new AtomicInteger();
        volatile boolean releaseFails;

        @Override
        public AcquireResult tryAcquire(LockKey key, String owner, Duration leaseFor) {
            return backend.tryAcquire(key, owner, leaseFor);
        }

        @Override
        public Optional<Grant> renew(LockKey key, String owner, Duration leaseFor) {
            return backend.renew(key, owner, leaseFor);
        }

        @Override
        public boolean release(LockKey key, String owner) {
            if (releaseFails) {
                failedReleases.incrementAndGet();
                throw new LeaseStoreException("release", key.render(), new TimeoutException(CAUSE));
            }
            return backend.release(key, owner);
        }

        @Override
        public Optional<LeaseInfo> inspect(LockKey key) {
            return backend.inspect(key);
        }

        @Override
        public boolean forceRelease(LockKey key) {
            return backend.forceRelease(key);
        }

        @Override
        public String name() {
            return "release-failing";
        }
    }
}
