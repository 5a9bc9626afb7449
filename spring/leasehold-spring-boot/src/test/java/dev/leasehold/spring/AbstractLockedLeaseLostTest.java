package dev.leasehold.spring;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;
import static org.springframework.test.web.servlet.request.MockMvcRequestBuilders.post;

import dev.leasehold.Lease;
import dev.leasehold.LeaseLostException;
import dev.leasehold.LeaseStoreException;
import dev.leasehold.LockKey;
import dev.leasehold.LockService;
import dev.leasehold.jdbc.FencedUpdate;
import dev.leasehold.jdbc.StaleFenceException;
import dev.leasehold.spi.ForwardingLeaseStore;
import dev.leasehold.spi.Grant;
import dev.leasehold.spi.LeaseStore;
import dev.leasehold.spi.Renewal;
import dev.leasehold.spring.actuator.LeaseholdObservations;
import dev.leasehold.spring.lock.Locked;
import dev.leasehold.spring.lock.LockedContext;
import dev.leasehold.spring.schema.TestDatabases;
import dev.leasehold.spring.web.LeaseholdProblemHandler;
import io.micrometer.observation.Observation;
import io.micrometer.observation.ObservationHandler;
import io.micrometer.observation.ObservationRegistry;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.SQLTransientConnectionException;
import java.time.Duration;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import javax.sql.DataSource;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.autoconfigure.aop.AopAutoConfiguration;
import org.springframework.boot.jdbc.autoconfigure.DataSourceAutoConfiguration;
import org.springframework.boot.jdbc.autoconfigure.DataSourceTransactionManagerAutoConfiguration;
import org.springframework.boot.jdbc.autoconfigure.JdbcTemplateAutoConfiguration;
import org.springframework.boot.sql.init.dependency.DependsOnDatabaseInitialization;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.boot.transaction.autoconfigure.TransactionAutoConfiguration;
import org.springframework.context.ApplicationContext;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.jdbc.datasource.DataSourceUtils;
import org.springframework.test.web.servlet.MockMvc;
import org.springframework.test.web.servlet.MvcResult;
import org.springframework.test.web.servlet.setup.MockMvcBuilders;
import org.springframework.transaction.PlatformTransactionManager;
import org.springframework.transaction.annotation.Transactional;
import org.springframework.transaction.support.TransactionSynchronization;
import org.springframework.transaction.support.TransactionSynchronizationManager;
import org.springframework.transaction.support.TransactionTemplate;
import org.springframework.web.bind.annotation.PathVariable;
import org.springframework.web.bind.annotation.PostMapping;
import org.springframework.web.bind.annotation.RestController;

/**
 * A {@code @Locked} transaction whose lease is lost while it runs (force-released by an operator,
 * or run out while the store refuses its renewals, then taken by a second holder on another
 * instance, coordinated by latches) with the JDBC lease store on the database of the subclass: the
 * first holder's transaction rolls back at its commit and the call answers 409 lease-lost, so two
 * increments never leave the counter at 1. The method reaches its lease through {@link
 * LockedContext#current()} and can fence its write with {@link FencedUpdate}: a former holder's
 * fenced write is refused once a newer holder wrote, also where no transaction of the method's
 * could be checked at its commit.
 */
abstract class AbstractLockedLeaseLostTest {

    /** A fresh database for one test, on the engine of the subclass. */
    abstract TestDatabases database();

    private TestDatabases database;

    @BeforeEach
    void createDatabase() {
        database = database();
    }

    @AfterEach
    void dropDatabase() {
        database.close();
    }

    /**
     * The lease store of an instance, which can be told to refuse renewals as a store that does not
     * answer in time would: a lease then ends at its expiry while its method still runs.
     */
    static final class RenewalRefusingStore extends ForwardingLeaseStore {
        private final LeaseStore store;
        private volatile boolean refusing;

        RenewalRefusingStore(LeaseStore store) {
            this.store = store;
        }

        void refuseRenewals() {
            refusing = true;
        }

        @Override
        protected LeaseStore delegate() {
            return store;
        }

        @Override
        public Optional<Grant> renew(LockKey key, String owner, Duration leaseFor) {
            if (refusing) {
                throw new LeaseStoreException(
                        "renew", key.render(), new SQLTransientConnectionException("renewals refused (test)"));
            }
            return store.renew(key, owner, leaseFor);
        }

        @Override
        public List<Optional<Grant>> renewAll(List<Renewal> batch) {
            if (refusing) {
                throw new LeaseStoreException(
                        "renew",
                        batch.size() + " leases",
                        new SQLTransientConnectionException("renewals refused (test)"));
            }
            return store.renewAll(batch);
        }
    }

    @Configuration(proxyBeanMethods = false)
    static class RefusableRenewals {
        @Bean
        @DependsOnDatabaseInitialization
        RenewalRefusingStore leaseholdLeaseStore(
                LeaseholdProperties properties, DataSource dataSource, ApplicationContext context) {
            return new RenewalRefusingStore(LeaseStores.create(properties, dataSource, context));
        }
    }

    static final LockKey KEY = LockKey.of("counter", "c1");

    /** Read-modify-write on a counter, with no database lock: only the lease keeps it right. */
    public static class Counter {
        final JdbcTemplate jdbc;
        final DataSource dataSource;
        volatile CountDownLatch inside = new CountDownLatch(0);
        volatile CountDownLatch mayWrite = new CountDownLatch(0);
        volatile Lease seen;

        public Counter(DataSource dataSource) {
            this.dataSource = dataSource;
            this.jdbc = new JdbcTemplate(dataSource);
        }

        /** The lease the last call saw (through the proxy: a method, not the field). */
        public Lease seen() {
            return seen;
        }

        public void pauseInside(CountDownLatch inside, CountDownLatch mayWrite) {
            this.inside = inside;
            this.mayWrite = mayWrite;
        }

        @Locked(namespace = "counter", key = "#id")
        @Transactional
        public long increment(String id) throws InterruptedException {
            return incrementUnderTheLease(id);
        }

        private long incrementUnderTheLease(String id) throws InterruptedException {
            seen = LockedContext.current();
            long value = jdbc.queryForObject("SELECT n FROM counter WHERE id = ?", Long.class, id);
            inside.countDown();
            mayWrite.await(30, TimeUnit.SECONDS);
            jdbc.update("UPDATE counter SET n = ? WHERE id = ?", value + 1, id);
            return value + 1;
        }

        /** As {@link #increment}, under a lease of 1 s (renewed while it runs, if the store lets it). */
        @Locked(namespace = "counter", key = "#id", leaseFor = "1s")
        @Transactional
        public long shortLeaseIncrement(String id) throws InterruptedException {
            return incrementUnderTheLease(id);
        }

        /**
         * Increments in a fenced transaction of its own (no Spring transaction of the method's: only
         * the fence keeps a former holder from writing), under a lease of 1 s; the number of rows.
         */
        @Locked(namespace = "counter", key = "#id", leaseFor = "1s")
        public int fencedWriteOfItsOwn(String id) throws Exception {
            Lease lease = LockedContext.current();
            seen = lease;
            inside.countDown();
            mayWrite.await(30, TimeUnit.SECONDS);
            return FencedUpdate.on(dataSource).run(lease, connection -> {
                try (PreparedStatement update =
                        connection.prepareStatement("UPDATE counter SET n = n + 1 WHERE id = ?")) {
                    update.setString(1, id);
                    return update.executeUpdate();
                }
            });
        }

        /** As {@link #increment}, the write fenced with the lease's fence in the same transaction. */
        @Locked(namespace = "counter", key = "#id")
        @Transactional
        public boolean fencedIncrement(String id) throws Exception {
            Lease lease = LockedContext.current();
            Connection connection = DataSourceUtils.getConnection(dataSource);
            try {
                if (!FencedUpdate.on(dataSource).tryAccept(connection, lease)) {
                    return false;
                }
            } finally {
                DataSourceUtils.releaseConnection(connection, dataSource);
            }
            jdbc.update("UPDATE counter SET n = n + 1 WHERE id = ?", id);
            return true;
        }
    }

    /** Writes whose pending work a transaction synchronization's {@code flush()} stands for. */
    public static class Flushing {
        final JdbcTemplate jdbc;

        public Flushing(DataSource dataSource) {
            this.jdbc = new JdbcTemplate(dataSource);
        }

        /** Increments in the transaction it begins; {@code atFlush} runs when the transaction is flushed. */
        @Locked(namespace = "counter", key = "#id")
        @Transactional
        public void write(String id, Runnable atFlush) {
            writeJoined(id, atFlush);
        }

        /** As {@link #write}, in the caller's transaction (this method begins none). */
        @Locked(namespace = "counter", key = "#id")
        public void joined(String id, Runnable atFlush) {
            writeJoined(id, atFlush);
        }

        private void writeJoined(String id, Runnable atFlush) {
            jdbc.update("UPDATE counter SET n = n + 1 WHERE id = ?", id);
            TransactionSynchronizationManager.registerSynchronization(new TransactionSynchronization() {
                @Override
                public void flush() {
                    atFlush.run();
                }
            });
        }

        @Locked(namespace = "counter", key = "#id")
        public String plain(String id) {
            return id;
        }
    }

    /** Two slow steps, each checked with {@link LockedContext#assertHeld()} before it runs. */
    public static class Steps {
        final List<String> done = new CopyOnWriteArrayList<>();
        volatile CountDownLatch inside = new CountDownLatch(0);
        volatile CountDownLatch mayGoOn = new CountDownLatch(0);

        public List<String> done() {
            return done;
        }

        public void pauseBetweenSteps(CountDownLatch inside, CountDownLatch mayGoOn) {
            this.inside = inside;
            this.mayGoOn = mayGoOn;
        }

        @Locked(namespace = "counter", key = "#id")
        public void twoSteps(String id) throws InterruptedException {
            LockedContext.assertHeld();
            done.add("first");
            inside.countDown();
            mayGoOn.await(30, TimeUnit.SECONDS);
            LockedContext.assertHeld();
            done.add("second");
        }
    }

    @RestController
    static class Increments {
        private final Counter counter;

        Increments(Counter counter) {
            this.counter = counter;
        }

        @PostMapping("/counters/{id}/increments")
        long increment(@PathVariable String id) throws InterruptedException {
            return counter.increment(id);
        }

        @PostMapping("/counters/{id}/short-lease-increments")
        long shortLeaseIncrement(@PathVariable String id) throws InterruptedException {
            return counter.shortLeaseIncrement(id);
        }
    }

    private ApplicationContextRunner instance() {
        return new ApplicationContextRunner()
                .withConfiguration(AutoConfigurations.of(LeaseholdAutoConfigurations.with(
                        AopAutoConfiguration.class,
                        DataSourceAutoConfiguration.class,
                        DataSourceTransactionManagerAutoConfiguration.class,
                        TransactionAutoConfiguration.class,
                        JdbcTemplateAutoConfiguration.class)))
                .withPropertyValues(
                        "spring.datasource.url=" + database.url(),
                        "spring.datasource.username=" + database.user(),
                        "spring.datasource.password=" + database.password(),
                        "leasehold.jdbc.initialize-schema=always",
                        "leasehold.stale-scan.enabled=false")
                .withUserConfiguration(RefusableRenewals.class)
                .withBean(Counter.class)
                .withBean(Flushing.class)
                .withBean(Steps.class);
    }

    private static void counterTable(JdbcTemplate jdbc) {
        jdbc.execute("CREATE TABLE counter (id VARCHAR(16) PRIMARY KEY, n BIGINT NOT NULL)");
        jdbc.update("INSERT INTO counter VALUES ('c1', 0)");
    }

    @Test
    void theCommitCheckRunsAfterTheFlushSoALeaseLostDuringTheFlushRollsBack() {
        instance().run(a -> {
            JdbcTemplate jdbc = a.getBean(JdbcTemplate.class);
            counterTable(jdbc);
            LockService locks = a.getBean(LockService.class);
            List<String> flushed = new CopyOnWriteArrayList<>();
            Runnable loseDuringFlush = () -> {
                flushed.add("flush");
                // As a slow JPA flush that outlives the lease: the key is force-released meanwhile.
                assertThat(locks.forceRelease(KEY, "stuck")).isTrue();
            };

            assertThatThrownBy(() -> a.getBean(Flushing.class).write("c1", loseDuringFlush))
                    .isInstanceOf(LeaseLostException.class);

            assertThat(flushed)
                    .as("the transaction was flushed before its commit")
                    .containsExactly("flush");
            assertThat(jdbc.queryForObject("SELECT n FROM counter WHERE id = 'c1'", Long.class))
                    .as("the lease lost during the flush rolled the write back")
                    .isZero();
        });
    }

    @Test
    void aJoinedCallersTransactionIsFlushedBeforeTheCheckToo() {
        instance().run(a -> {
            JdbcTemplate jdbc = a.getBean(JdbcTemplate.class);
            counterTable(jdbc);
            LockService locks = a.getBean(LockService.class);
            TransactionTemplate transactions = new TransactionTemplate(a.getBean(PlatformTransactionManager.class));
            Flushing flushing = a.getBean(Flushing.class);

            assertThatThrownBy(() -> transactions.executeWithoutResult(
                            status -> flushing.joined("c1", () -> assertThat(locks.forceRelease(KEY, "stuck"))
                                    .isTrue())))
                    .isInstanceOf(LeaseLostException.class);

            assertThat(jdbc.queryForObject("SELECT n FROM counter WHERE id = 'c1'", Long.class))
                    .isZero();
        });
    }

    @Test
    void aFailingFlushPropagatesAndRollsBack() {
        instance().run(a -> {
            JdbcTemplate jdbc = a.getBean(JdbcTemplate.class);
            counterTable(jdbc);

            assertThatThrownBy(() -> a.getBean(Flushing.class).write("c1", () -> {
                        throw new IllegalStateException("constraint violated at flush");
                    }))
                    .isInstanceOf(IllegalStateException.class)
                    .hasMessage("constraint violated at flush");

            assertThat(jdbc.queryForObject("SELECT n FROM counter WHERE id = 'c1'", Long.class))
                    .isZero();
            assertThat(a.getBean(LockService.class).inspect(KEY)).as("released").isEmpty();
        });
    }

    @Test
    void aStepFailingAfterTheAcquireReleasesTheLeaseAndStopsTheHoldObservation() {
        ObservationRegistry registry = ObservationRegistry.create();
        List<String> stopped = new CopyOnWriteArrayList<>();
        registry.observationConfig().observationHandler(new ObservationHandler<>() {
            @Override
            public boolean supportsContext(Observation.Context context) {
                return true;
            }

            @Override
            public void onScopeOpened(Observation.Context context) {
                if (context.getName().equals(LeaseholdObservations.HOLD)) {
                    throw new IllegalStateException("tracing context unavailable");
                }
            }

            @Override
            public void onStop(Observation.Context context) {
                stopped.add(context.getName());
            }
        });
        instance().withBean(ObservationRegistry.class, () -> registry).run(a -> {
            assertThatThrownBy(() -> a.getBean(Flushing.class).plain("c1")).hasMessage("tracing context unavailable");

            assertThat(a.getBean(LockService.class).inspect(KEY))
                    .as("the lease was released, not held until its expiry")
                    .isEmpty();
            assertThat(stopped).contains(LeaseholdObservations.HOLD);
        });
    }

    @Test
    void aTransactionWhoseLeaseWasLostAndTakenRollsBackAtCommitAndAnswers409() {
        instance().run(a -> instance().run(b -> {
            JdbcTemplate jdbc = a.getBean(JdbcTemplate.class);
            jdbc.execute("CREATE TABLE counter (id VARCHAR(16) PRIMARY KEY, n BIGINT NOT NULL)");
            jdbc.update("INSERT INTO counter VALUES ('c1', 0)");
            Counter first = a.getBean(Counter.class);
            MockMvc mvc = MockMvcBuilders.standaloneSetup(new Increments(first))
                    .setControllerAdvice(new LeaseholdProblemHandler())
                    .build();
            CountDownLatch inside = new CountDownLatch(1);
            CountDownLatch mayWrite = new CountDownLatch(1);
            first.pauseInside(inside, mayWrite);

            CompletableFuture<MvcResult> slow = CompletableFuture.supplyAsync(() -> {
                try {
                    return mvc.perform(post("/counters/c1/increments")).andReturn();
                } catch (Exception e) {
                    throw new IllegalStateException(e);
                }
            });
            assertThat(inside.await(30, TimeUnit.SECONDS)).isTrue();
            assertThat(first.seen()).as("the method reaches its lease").isNotNull();
            assertThat(first.seen().key()).isEqualTo(KEY);

            // An operator force-releases the key on the other instance, whose caller then increments.
            assertThat(b.getBean(LockService.class).forceRelease(KEY, "stuck")).isTrue();
            assertThat(b.getBean(Counter.class).increment("c1")).isEqualTo(1);

            mayWrite.countDown();
            MvcResult answer = slow.get(30, TimeUnit.SECONDS);

            long counter = jdbc.queryForObject("SELECT n FROM counter WHERE id = 'c1'", Long.class);
            int succeeded = 1 + (answer.getResponse().getStatus() == 200 ? 1 : 0);
            assertThat(counter)
                    .as("every increment that answered success is in the counter")
                    .isEqualTo(succeeded);
            assertThat(answer.getResponse().getStatus())
                    .as("the first holder's commit was refused: "
                            + answer.getResponse().getContentAsString())
                    .isEqualTo(409);
            assertThat(answer.getResponse().getContentAsString()).contains("lease-lost");
            assertThat(counter).isEqualTo(1);
        }));
    }

    @Test
    void aLeaseLostLocallyRollsBackTheCommitWithLeaseLost() {
        instance().run(a -> {
            JdbcTemplate jdbc = a.getBean(JdbcTemplate.class);
            jdbc.execute("CREATE TABLE counter (id VARCHAR(16) PRIMARY KEY, n BIGINT NOT NULL)");
            jdbc.update("INSERT INTO counter VALUES ('c1', 0)");
            Counter counter = a.getBean(Counter.class);
            CountDownLatch inside = new CountDownLatch(1);
            CountDownLatch mayWrite = new CountDownLatch(1);
            counter.pauseInside(inside, mayWrite);
            CompletableFuture<Long> slow = CompletableFuture.supplyAsync(() -> {
                try {
                    return counter.increment("c1");
                } catch (InterruptedException e) {
                    throw new IllegalStateException(e);
                }
            });
            assertThat(inside.await(30, TimeUnit.SECONDS)).isTrue();
            // Force-released through the same service: the holder learns of it at once.
            assertThat(a.getBean(LockService.class).forceRelease(KEY, "stuck")).isTrue();
            assertThat(counter.seen().isHeld()).isFalse();
            mayWrite.countDown();

            assertThatThrownBy(() -> slow.get(30, TimeUnit.SECONDS)).hasCauseInstanceOf(LeaseLostException.class);
            assertThat(jdbc.queryForObject("SELECT n FROM counter WHERE id = 'c1'", Long.class))
                    .as("the write of a lost lease rolled back")
                    .isZero();
        });
    }

    @Test
    void assertHeldInsideALockedMethodStopsTheStepAfterItsLeaseWasLost() {
        instance().run(a -> {
            Steps steps = a.getBean(Steps.class);
            steps.twoSteps("c1");
            assertThat(steps.done()).as("a held lease passes both checks").containsExactly("first", "second");
            steps.done().clear();

            CountDownLatch inside = new CountDownLatch(1);
            CountDownLatch mayGoOn = new CountDownLatch(1);
            steps.pauseBetweenSteps(inside, mayGoOn);
            CompletableFuture<Void> slow = CompletableFuture.runAsync(() -> {
                try {
                    steps.twoSteps("c1");
                } catch (InterruptedException e) {
                    throw new IllegalStateException(e);
                }
            });
            assertThat(inside.await(30, TimeUnit.SECONDS)).isTrue();
            // Force-released through the same service: the holder learns of it at once.
            assertThat(a.getBean(LockService.class).forceRelease(KEY, "stuck")).isTrue();
            mayGoOn.countDown();

            assertThatThrownBy(() -> slow.get(30, TimeUnit.SECONDS))
                    .hasCauseInstanceOf(LeaseLostException.class)
                    .cause()
                    .hasMessageContaining("was lost");
            assertThat(steps.done()).as("the step after the loss never ran").containsExactly("first");
            assertThatThrownBy(LockedContext::assertHeld)
                    .as("outside a @Locked method")
                    .isInstanceOf(IllegalStateException.class)
                    .hasMessage("no @Locked method runs on this thread");
        });
    }

    @Test
    void assertHeldPassesInABypassedCallWhichRunsWithoutItsLockOnPurpose() {
        instance().withPropertyValues("leasehold.lock.mode=bypass").run(a -> {
            Steps steps = a.getBean(Steps.class);
            steps.twoSteps("c1");
            assertThat(steps.done()).containsExactly("first", "second");
            assertThat(a.getBean(LockService.class).inspect(KEY))
                    .as("no lease was taken")
                    .isEmpty();
        });
    }

    @Test
    void aFencedWriteOfTheMethodUsesTheLeasesFence() {
        instance().run(a -> {
            JdbcTemplate jdbc = a.getBean(JdbcTemplate.class);
            jdbc.execute("CREATE TABLE counter (id VARCHAR(16) PRIMARY KEY, n BIGINT NOT NULL)");
            jdbc.update("INSERT INTO counter VALUES ('c1', 0)");
            Counter counter = a.getBean(Counter.class);

            assertThat(counter.fencedIncrement("c1")).isTrue();
            assertThat(counter.fencedIncrement("c1")).isTrue();

            assertThat(jdbc.queryForObject("SELECT n FROM counter WHERE id = 'c1'", Long.class))
                    .isEqualTo(2);
            assertThat(jdbc.queryForObject(
                            "SELECT COUNT(*) FROM leasehold_fence WHERE resource = ?", Integer.class, KEY.render()))
                    .as("the fence of the key was recorded in the method's transaction")
                    .isEqualTo(1);
            assertThat(LockedContext.find())
                    .as("outside a @Locked method there is no lease")
                    .isEmpty();
        });
    }

    @Test
    void aMethodThatOutlastsItsLeaseWhileRenewalsFailRollsBackAndAnswers409() {
        instance().run(a -> instance().run(b -> {
            JdbcTemplate jdbc = a.getBean(JdbcTemplate.class);
            counterTable(jdbc);
            Counter first = a.getBean(Counter.class);
            MockMvc mvc = MockMvcBuilders.standaloneSetup(new Increments(first))
                    .setControllerAdvice(new LeaseholdProblemHandler())
                    .build();
            CountDownLatch inside = new CountDownLatch(1);
            CountDownLatch mayWrite = new CountDownLatch(1);
            first.pauseInside(inside, mayWrite);
            ((RenewalRefusingStore) a.getBean(LeaseStore.class)).refuseRenewals();

            CompletableFuture<MvcResult> slow = CompletableFuture.supplyAsync(() -> {
                try {
                    return mvc.perform(post("/counters/c1/short-lease-increments"))
                            .andReturn();
                } catch (Exception e) {
                    throw new IllegalStateException(e);
                }
            });
            assertThat(inside.await(30, TimeUnit.SECONDS)).isTrue();
            Lease lease = first.seen();
            // The method's work outlasts its 1 s lease, which no renewal extends: it runs out.
            await().atMost(Duration.ofSeconds(30)).until(() -> !lease.isHeld());
            LockService other = b.getBean(LockService.class);
            await().atMost(Duration.ofSeconds(30))
                    .until(() -> other.inspect(KEY).isEmpty());
            assertThat(b.getBean(Counter.class).increment("c1"))
                    .as("the second holder increments")
                    .isEqualTo(1);

            mayWrite.countDown();
            MvcResult answer = slow.get(30, TimeUnit.SECONDS);

            long counter = jdbc.queryForObject("SELECT n FROM counter WHERE id = 'c1'", Long.class);
            int succeeded = 1 + (answer.getResponse().getStatus() == 200 ? 1 : 0);
            assertThat(counter)
                    .as(
                            "every increment that answered success is in the counter (first answered %d %s)",
                            answer.getResponse().getStatus(),
                            answer.getResponse().getContentAsString())
                    .isEqualTo(succeeded);
            assertThat(answer.getResponse().getStatus())
                    .as("the commit of the lease that ran out was refused")
                    .isEqualTo(409);
            assertThat(answer.getResponse().getContentAsString()).contains("lease-lost");
            assertThat(counter)
                    .as("nothing of the first holder's was committed")
                    .isEqualTo(1);
        }));
    }

    @Test
    void aFormerHoldersFencedWriteIsRefusedOnceANewerHolderWrote() {
        instance().run(a -> instance().run(b -> {
            JdbcTemplate jdbc = a.getBean(JdbcTemplate.class);
            counterTable(jdbc);
            Counter first = a.getBean(Counter.class);
            CountDownLatch inside = new CountDownLatch(1);
            CountDownLatch mayWrite = new CountDownLatch(1);
            first.pauseInside(inside, mayWrite);
            ((RenewalRefusingStore) a.getBean(LeaseStore.class)).refuseRenewals();

            CompletableFuture<Integer> stale = CompletableFuture.supplyAsync(() -> {
                try {
                    return first.fencedWriteOfItsOwn("c1");
                } catch (Exception e) {
                    throw new CompletionException(e);
                }
            });
            assertThat(inside.await(30, TimeUnit.SECONDS)).isTrue();
            Lease former = first.seen();
            await().atMost(Duration.ofSeconds(30)).until(() -> !former.isHeld());
            LockService other = b.getBean(LockService.class);
            await().atMost(Duration.ofSeconds(30))
                    .until(() -> other.inspect(KEY).isEmpty());
            Counter second = b.getBean(Counter.class);
            assertThat(second.fencedWriteOfItsOwn("c1"))
                    .as("the newer holder's fenced write")
                    .isEqualTo(1);
            long newer = second.seen().fence();
            assertThat(newer).isGreaterThan(former.fence());

            mayWrite.countDown();

            assertThatThrownBy(() -> stale.get(30, TimeUnit.SECONDS))
                    .as("the former holder's write, fenced with fence %d after fence %d wrote", former.fence(), newer)
                    .hasCauseInstanceOf(StaleFenceException.class);
            assertThat(jdbc.queryForObject("SELECT n FROM counter WHERE id = 'c1'", Long.class))
                    .as("only the newer holder's write is in the counter")
                    .isEqualTo(1);
            assertThat(jdbc.queryForObject(
                            "SELECT fence FROM leasehold_fence WHERE resource = ?", Long.class, KEY.render()))
                    .as("the key's fence is the newer holder's")
                    .isEqualTo(newer);
        }));
    }
}
