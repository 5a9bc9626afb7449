package dev.leasehold.spring.schema;

import static org.assertj.core.api.Assertions.assertThat;

import dev.leasehold.LeaseOptions;
import dev.leasehold.LockKey;
import dev.leasehold.LockService;
import dev.leasehold.idempotency.Claim;
import dev.leasehold.idempotency.RequestRecords;
import dev.leasehold.spring.LeaseholdAutoConfigurations;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.autoconfigure.aop.AopAutoConfiguration;
import org.springframework.boot.flyway.autoconfigure.FlywayAutoConfiguration;
import org.springframework.boot.jdbc.autoconfigure.DataSourceAutoConfiguration;
import org.springframework.boot.jdbc.autoconfigure.JdbcTemplateAutoConfiguration;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.jdbc.core.JdbcTemplate;

/**
 * A stock Spring Boot application with its own Flyway migrations, starting with its own {@code
 * V1__}, and Leasehold with default settings: both sets of tables are created, each in its own
 * history, and the application starts again on the same database.
 */
abstract class AbstractFlywayApplicationTest {

    private TestDatabases database;

    abstract TestDatabases database();

    @BeforeEach
    void createDatabase() {
        database = database();
    }

    @AfterEach
    void dropDatabase() {
        database.close();
    }

    private ApplicationContextRunner application() {
        return new ApplicationContextRunner()
                .withConfiguration(AutoConfigurations.of(LeaseholdAutoConfigurations.with(
                        DataSourceAutoConfiguration.class,
                        JdbcTemplateAutoConfiguration.class,
                        FlywayAutoConfiguration.class,
                        AopAutoConfiguration.class)))
                .withPropertyValues(
                        "spring.datasource.url=" + database.url(),
                        "spring.datasource.username=" + database.user(),
                        "spring.datasource.password=" + database.password(),
                        "spring.flyway.locations=classpath:app-migrations",
                        "leasehold.stale-scan.enabled=false");
    }

    @Test
    void applicationWithItsOwnV1AndLeaseholdMigrateSideBySideAndStartAgain() {
        for (int start = 1; start <= 2; start++) {
            int round = start;
            application().run(context -> {
                assertThat(context).hasNotFailed();
                LockService locks = context.getBean(LockService.class);
                try (var lease = locks.tryAcquire(LockKey.of("flyway", "round" + round), LeaseOptions.defaults())
                        .orElseThrow()) {
                    assertThat(lease.fence()).isPositive();
                }
                Claim claim = context.getBean(RequestRecords.class)
                        .begin("flyway-test", "round-" + round, "v1:" + "0".repeat(64));
                assertThat(claim).isInstanceOf(Claim.Claimed.class);
                JdbcTemplate jdbc = context.getBean(JdbcTemplate.class);
                assertThat(jdbc.queryForList(
                                "SELECT " + q("version") + " FROM " + q("flyway_schema_history") + " WHERE "
                                        + q("success") + " = " + trueLiteral() + " AND " + q("type")
                                        + " = 'SQL' ORDER BY "
                                        + q("installed_rank"),
                                String.class))
                        .as("the application's history holds the application's migration only")
                        .containsExactly("1");
                List<String> leasehold = jdbc.queryForList(
                        "SELECT " + q("version") + " FROM " + q("leasehold_schema_history") + " WHERE "
                                + q("success") + " = " + trueLiteral() + " AND " + q("type") + " = 'SQL' ORDER BY "
                                + q("installed_rank"),
                        String.class);
                assertThat(leasehold)
                        .as("Leasehold's history holds Leasehold's migrations")
                        .startsWith("1", "1.1", "1.2", "1.3")
                        .containsSubsequence("1.3", "2", "2.1", "3"); // PostgreSQL also has 1.4
                assertThat(jdbc.queryForObject("SELECT note FROM app_account WHERE id = 'seed'", String.class))
                        .isEqualTo("a;b -- not a comment");
            });
        }
    }

    /** Flyway's history tables are created with quoted lower-case names. */
    String q(String identifier) {
        return identifier;
    }

    String trueLiteral() {
        return "TRUE";
    }
}
