package dev.leasehold.spring;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.springframework.test.web.servlet.request.MockMvcRequestBuilders.post;

import dev.leasehold.Lease;
import dev.leasehold.LeaseLostException;
import dev.leasehold.LockKey;
import dev.leasehold.LockService;
import dev.leasehold.jdbc.FencedUpdate;
import io.micrometer.observation.Observation;
import io.micrometer.observation.ObservationHandler;
import io.micrometer.observation.ObservationRegistry;
import java.sql.Connection;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import javax.sql.DataSource;
import org.junit.jupiter.api.Test;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.autoconfigure.aop.AopAutoConfiguration;
import org.springframework.boot.jdbc.autoconfigure.DataSourceAutoConfiguration;
import org.springframework.boot.jdbc.autoconfigure.DataSourceTransactionManagerAutoConfiguration;
import org.springframework.boot.jdbc.autoconfigure.JdbcTemplateAutoConfiguration;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.boot.transaction.autoconfigure.TransactionAutoConfiguration;
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
 * then taken by a second holder on another instance, coordinated by latches) on H2 with the JDBC
 * lease store: the first holder's transaction rolls back at its commit and the call answers 409
 * lease-lost, so two increments never leave the counter at 1. The method reaches its lease through
 * {@link LockedContext#current()} and can fence its write with {@link FencedUpdate}.
 */
class LockedLeaseLostTest {

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
            seen = LockedContext.current();
            long value = jdbc.queryForObject("SELECT n FROM counter WHERE id = ?", Long.class, id);
            inside.countDown();
            mayWrite.await(30, TimeUnit.SECONDS);
            jdbc.update("UPDATE counter SET n = ? WHERE id = ?", value + 1, id);
            return value + 1;
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
    }

    private static ApplicationContextRunner instance(String database) {
        return new ApplicationContextRunner()
                .withConfiguration(AutoConfigurations.of(
                        AopAutoConfiguration.class,
                        DataSourceAutoConfiguration.class,
                        DataSourceTransactionManagerAutoConfiguration.class,
                        TransactionAutoConfiguration.class,
                        JdbcTemplateAutoConfiguration.class,
                        LeaseholdAutoConfiguration.class))
                .withPropertyValues(
                        "spring.datasource.url=jdbc:h2:mem:" + database + ";DB_CLOSE_DELAY=-1",
                        "leasehold.stale-scan.enabled=false")
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
        String database = "lease-lost-flush-" + UUID.randomUUID();
        instance(database).run(a -> {
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
        String database = "lease-lost-flush-joined-" + UUID.randomUUID();
        instance(database).run(a -> {
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
        String database = "flush-fails-" + UUID.randomUUID();
        instance(database).run(a -> {
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
        instance("scope-fails-" + UUID.randomUUID())
                .withBean(ObservationRegistry.class, () -> registry)
                .run(a -> {
                    assertThatThrownBy(() -> a.getBean(Flushing.class).plain("c1"))
                            .hasMessage("tracing context unavailable");

                    assertThat(a.getBean(LockService.class).inspect(KEY))
                            .as("the lease was released, not held until its expiry")
                            .isEmpty();
                    assertThat(stopped).contains(LeaseholdObservations.HOLD);
                });
    }

    @Test
    void aTransactionWhoseLeaseWasLostAndTakenRollsBackAtCommitAndAnswers409() {
        String database = "lease-lost-" + UUID.randomUUID();
        instance(database).run(a -> instance(database).run(b -> {
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
        String database = "lease-lost-local-" + UUID.randomUUID();
        instance(database).run(a -> {
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
        instance("assert-held-" + UUID.randomUUID()).run(a -> {
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
        instance("assert-held-bypass-" + UUID.randomUUID())
                .withPropertyValues("leasehold.lock.mode=bypass")
                .run(a -> {
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
        String database = "lease-fenced-" + UUID.randomUUID();
        instance(database).run(a -> {
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
}
