package dev.leasehold.spring;

import static org.assertj.core.api.Assertions.assertThat;

import dev.leasehold.Lease;
import dev.leasehold.LeaseOptions;
import dev.leasehold.LockKey;
import dev.leasehold.LockService;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.Statement;
import java.time.Duration;
import javax.sql.DataSource;
import org.junit.jupiter.api.Test;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.autoconfigure.aop.AopAutoConfiguration;
import org.springframework.boot.jdbc.autoconfigure.DataSourceAutoConfiguration;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;

class LeaseRowHousekeepingTest {

    private final ApplicationContextRunner runner = new ApplicationContextRunner()
            .withConfiguration(AutoConfigurations.of(LeaseholdAutoConfigurations.with(AopAutoConfiguration.class)));

    private final ApplicationContextRunner withH2 = runner.withConfiguration(
                    AutoConfigurations.of(DataSourceAutoConfiguration.class))
            .withPropertyValues(
                    "spring.datasource.url=jdbc:h2:mem:housekeeping-" + System.nanoTime() + ";DB_CLOSE_DELAY=-1");

    @Test
    void onTheSqlStoreHousekeepingRunsByDefaultAndDeletesOnlyRowsEndedLongerThanTheRetention() {
        withH2.run(context -> {
            assertThat(context).hasNotFailed().hasSingleBean(LeaseRowHousekeeping.class);
            LeaseRowHousekeeping housekeeping = context.getBean(LeaseRowHousekeeping.class);
            assertThat(housekeeping.isRunning()).isTrue();
            DataSource dataSource = context.getBean(DataSource.class);
            // A row whose lease ended at the epoch, long past the default retention of an hour.
            execute(
                    dataSource,
                    "INSERT INTO leasehold_lease (lock_key, owner_token, fence, expires_at_ms,"
                            + " acquired_at_ms, holder) VALUES ('old:order-1', NULL, 7, 0, 0, NULL)");
            LockService locks = context.getBean(LockService.class);
            locks.acquire(
                            LockKey.of("recent", "order-3"),
                            LeaseOptions.builder()
                                    .leaseFor(Duration.ofMinutes(5))
                                    .build())
                    .close();
            try (Lease live = locks.acquire(
                    LockKey.of("live", "order-2"),
                    LeaseOptions.builder().leaseFor(Duration.ofMinutes(5)).build())) {
                assertThat(housekeeping.runOnce()).isEqualTo(1);
                assertThat(keys(dataSource)).containsExactlyInAnyOrder("live:order-2", "recent:order-3");
                assertThat(live.isHeld()).isTrue();
            }
        });
    }

    @Test
    void turnedOffThereIsNoHousekeeping() {
        withH2.withPropertyValues("leasehold.jdbc.housekeeping.enabled=false")
                .run(context -> assertThat(context).hasNotFailed().doesNotHaveBean(LeaseRowHousekeeping.class));
    }

    @Test
    void withAnotherLeaseStoreItNeverRuns() {
        runner.withPropertyValues("leasehold.backend=memory").run(context -> {
            assertThat(context).hasNotFailed();
            LeaseRowHousekeeping housekeeping = context.getBean(LeaseRowHousekeeping.class);
            assertThat(housekeeping.isRunning()).isFalse();
            assertThat(housekeeping.runOnce()).isZero();
        });
    }

    @Test
    void aRetentionUnderAMinuteOrABatchOutOfRangeIsRefusedAtStartupNamingTheProperty() {
        withH2.withPropertyValues("leasehold.jdbc.housekeeping.retention=30s").run(context -> assertThat(
                        context.getStartupFailure())
                .rootCause()
                .hasMessageContaining("leasehold.jdbc.housekeeping.retention must be at least PT1M, was PT30S"));
        withH2.withPropertyValues("leasehold.jdbc.housekeeping.batch-size=0").run(context -> assertThat(
                        context.getStartupFailure())
                .rootCause()
                .hasMessageContaining("leasehold.jdbc.housekeeping.batch-size must be between 1 and 10000, was 0"));
    }

    private static void execute(DataSource dataSource, String sql) throws Exception {
        try (Connection connection = dataSource.getConnection();
                Statement statement = connection.createStatement()) {
            statement.execute(sql);
        }
    }

    private static java.util.List<String> keys(DataSource dataSource) throws Exception {
        java.util.List<String> keys = new java.util.ArrayList<>();
        try (Connection connection = dataSource.getConnection();
                Statement statement = connection.createStatement();
                ResultSet rows = statement.executeQuery("SELECT lock_key FROM leasehold_lease")) {
            while (rows.next()) {
                keys.add(rows.getString(1));
            }
        }
        return keys;
    }
}
