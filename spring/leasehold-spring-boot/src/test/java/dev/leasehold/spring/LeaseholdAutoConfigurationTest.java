package dev.leasehold.spring;

import static org.assertj.core.api.Assertions.assertThat;

import dev.leasehold.LeaseOptions;
import dev.leasehold.LockKey;
import dev.leasehold.LockService;
import dev.leasehold.idempotency.IdempotentExecutor;
import dev.leasehold.idempotency.RequestRecords;
import dev.leasehold.jdbc.JdbcLeaseStore;
import dev.leasehold.memory.InMemoryLeaseStore;
import dev.leasehold.redis.RedisLeaseStore;
import dev.leasehold.spi.AcquireRequest;
import dev.leasehold.spi.AcquireResult;
import dev.leasehold.spi.LeaseStore;
import dev.leasehold.spring.actuator.AuditLog;
import dev.leasehold.spring.actuator.LeaseholdMetrics;
import dev.leasehold.spring.lock.LockModeSwitch;
import dev.leasehold.spring.retry.DelayedRetries;
import dev.leasehold.testkit.TestServices;
import io.lettuce.core.RedisClient;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.sql.Connection;
import java.sql.ResultSet;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import javax.sql.DataSource;
import org.junit.jupiter.api.Test;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.autoconfigure.aop.AopAutoConfiguration;
import org.springframework.boot.jdbc.autoconfigure.DataSourceAutoConfiguration;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;

class LeaseholdAutoConfigurationTest {

    private final ApplicationContextRunner runner = new ApplicationContextRunner()
            .withConfiguration(AutoConfigurations.of(LeaseholdAutoConfigurations.with(AopAutoConfiguration.class)));

    private final ApplicationContextRunner withH2 = runner.withConfiguration(
                    AutoConfigurations.of(DataSourceAutoConfiguration.class))
            .withPropertyValues(
                    "spring.datasource.url=jdbc:h2:mem:autoconfig-" + System.nanoTime() + ";DB_CLOSE_DELAY=-1");

    @Test
    void backendAutoNeverFallsBackToMemory() {
        runner.run(context -> {
            assertThat(context).hasFailed();
            assertThat(context.getStartupFailure())
                    .rootCause()
                    .hasMessageContaining("leasehold.backend=auto found no lease store")
                    .hasMessageContaining("leasehold.backend=memory");
        });
    }

    @Test
    void backendMemoryKeepsLeasesInThisJvmWhenAskedFor() {
        runner.withPropertyValues("leasehold.backend=memory").run(context -> {
            assertThat(context).hasSingleBean(LeaseStore.class).hasSingleBean(LockService.class);
            assertThat(context.getBean(LeaseStore.class)).isInstanceOf(InMemoryLeaseStore.class);
            assertThat(context).hasSingleBean(LockModeSwitch.class).hasSingleBean(AuditLog.class);
            assertThat(context).doesNotHaveBean(RequestRecords.class).doesNotHaveBean(LeaseholdMetrics.class);
        });
    }

    @Test
    void withADataSourceLeasesAndRecordsLiveInTheDatabaseAndTheSchemaIsCreated() {
        withH2.run(context -> {
            assertThat(context.getBean(LeaseStore.class)).isInstanceOf(JdbcLeaseStore.class);
            assertThat(context).hasSingleBean(RequestRecords.class).hasSingleBean(IdempotentExecutor.class);
            assertThat(context).hasSingleBean(DelayedRetries.class);
            assertThat(context).hasSingleBean(dev.leasehold.spring.schema.LeaseholdFlywayMigration.class);
            try (Connection c = context.getBean(DataSource.class).getConnection();
                    ResultSet tables = c.getMetaData().getTables(null, null, "LEASEHOLD_%", null)) {
                int count = 0;
                while (tables.next()) {
                    String name = tables.getString("TABLE_NAME");
                    // Leasehold's Flyway history, and a table of a test-only migration
                    if (!name.equalsIgnoreCase("leasehold_schema_history")
                            && !name.equalsIgnoreCase("leasehold_test_literal")) {
                        count++;
                    }
                }
                assertThat(count)
                        .as("lease, fence, waiter, request, effect and retry tables")
                        .isEqualTo(6);
            }
            LockService locks = context.getBean(LockService.class);
            try (var lease = locks.tryAcquire(LockKey.of("t", "1"), LeaseOptions.defaults())
                    .orElseThrow()) {
                assertThat(lease.fence()).isPositive();
            }
        });
    }

    @Test
    void backendMemoryWinsOverADataSourceWhenAskedFor() {
        withH2.withPropertyValues("leasehold.backend=memory")
                .run(context -> assertThat(context.getBean(LeaseStore.class)).isInstanceOf(InMemoryLeaseStore.class));
    }

    @Test
    void backendRedisUsesTheConfiguredUrl() {
        String url = TestServices.redis().uri();
        runner.withPropertyValues("leasehold.backend=redis", "leasehold.redis.url=" + url)
                .run(context -> {
                    LeaseStore store = context.getBean(LeaseStore.class);
                    assertThat(store.name()).isEqualTo("redis");
                    LockService locks = context.getBean(LockService.class);
                    try (var lease = locks.tryAcquire(LockKey.of("autoconfig", "redis"), LeaseOptions.defaults())
                            .orElseThrow()) {
                        assertThat(store.inspect(lease.key())).isPresent();
                    }
                });
    }

    @Test
    void aRedisStoreWithItsOwnClientKeepsTheOneScriptBatchAndTheAsynchronousAcquire() {
        String url = TestServices.redis().uri();
        runner.withPropertyValues(
                        "leasehold.backend=redis",
                        "leasehold.redis.url=" + url,
                        "leasehold.redis.key-prefix=autoconfig-own-" + System.nanoTime() + ":")
                .run(context -> {
                    LeaseStore store = context.getBean(LeaseStore.class);
                    String owner = "0123456789abcdef0123456789abcdef";
                    assertThat(store.acquiresAsynchronously())
                            .as("the asynchronous acquire of the Redis store")
                            .isTrue();
                    var answer = store.tryAcquireAsync(
                            AcquireRequest.once(LockKey.of("autoconfig", "async"), owner, Duration.ofSeconds(30)));
                    assertThat(answer.toCompletableFuture().get(10, TimeUnit.SECONDS))
                            .isInstanceOf(AcquireResult.Granted.class);
                    assertThat(store.release(LockKey.of("autoconfig", "async"), owner))
                            .isTrue();

                    List<LockKey> batch = new ArrayList<>();
                    for (int i = 0; i < 10; i++) {
                        batch.add(LockKey.of("autoconfig", "one", "batch-" + i).withHashTag(0));
                    }
                    RedisClient counter = RedisClient.create(url);
                    try (var connection = counter.connect()) {
                        long before = evalshaCalls(connection.sync().info("commandstats"));
                        try (var group = context.getBean(LockService.class)
                                .acquireAll(batch, LeaseOptions.defaults().withWait(Duration.ofSeconds(5)))) {
                            assertThat(group).isNotNull();
                        }
                        long scripts = evalshaCalls(connection.sync().info("commandstats")) - before;
                        // one script for the batch and one per key given back; key by key would be 10 + 10
                        assertThat(scripts)
                                .as("scripts for a batch of ten, its release included")
                                .isLessThan(15);
                    } finally {
                        counter.shutdown();
                    }
                });
    }

    private static long evalshaCalls(String commandstats) {
        for (String line : commandstats.split("\r?\n")) {
            if (line.startsWith("cmdstat_evalsha:")) {
                String calls = line.substring(line.indexOf("calls=") + 6);
                return Long.parseLong(calls.substring(0, calls.indexOf(',')));
            }
        }
        return 0;
    }

    @Test
    void backendRedisWithoutAClientFailsWithAClearMessage() {
        runner.withPropertyValues("leasehold.backend=redis").run(context -> {
            assertThat(context).hasFailed();
            assertThat(context.getStartupFailure()).rootCause().hasMessageContaining("leasehold.redis.url");
        });
    }

    @Test
    void backendJdbcWithoutADataSourceFailsWithAClearMessage() {
        runner.withPropertyValues("leasehold.backend=jdbc").run(context -> {
            assertThat(context).hasFailed();
            assertThat(context.getStartupFailure()).rootCause().hasMessageContaining("DataSource");
        });
    }

    @Test
    void applicationBeansWin() {
        InMemoryLeaseStore mine = new InMemoryLeaseStore();
        withH2.withBean(LeaseStore.class, () -> mine).run(context -> {
            assertThat(context.getBean(LeaseStore.class)).isSameAs(mine);
            assertThat(context).hasSingleBean(LockService.class);
        });
        LockService myLocks = LockService.builder(new InMemoryLeaseStore()).build();
        runner.withPropertyValues("leasehold.backend=memory")
                .withBean(LockService.class, () -> myLocks)
                .run(context -> assertThat(context.getBean(LockService.class)).isSameAs(myLocks));
        runner.withPropertyValues("leasehold.backend=memory")
                .withBean(LockModeSwitch.class, () -> new LockModeSwitch(LeaseholdProperties.Mode.BYPASS))
                .run(context -> assertThat(context.getBean(LockModeSwitch.class).bypassed())
                        .isTrue());
    }

    @Test
    void switchesAndMetricsFollowTheirProperties() {
        runner.withPropertyValues(
                        "leasehold.backend=memory",
                        "leasehold.audit.enabled=false",
                        "leasehold.stale-scan.enabled=false",
                        "leasehold.lock.mode=bypass")
                .run(context -> {
                    assertThat(context).doesNotHaveBean(AuditLog.class).doesNotHaveBean("leaseholdStaleLeaseScan");
                    assertThat(context.getBean(LockModeSwitch.class).bypassed()).isTrue();
                });
        runner.withPropertyValues("leasehold.backend=memory")
                .withBean(MeterRegistry.class, SimpleMeterRegistry::new)
                .run(context -> assertThat(context).hasSingleBean(LeaseholdMetrics.class));
    }

    @Test
    void redisClassesAreOnlyNeededWhenRedisIsChosen() {
        assertThat(RedisLeaseStore.class).isNotNull();
        assertThat(LeaseStores.REDIS_PRESENT).isTrue();
    }
}
