package dev.leasehold.spring.schema;

import static org.assertj.core.api.Assertions.assertThat;

import dev.leasehold.spring.LeaseholdAutoConfigurations;
import javax.sql.DataSource;
import org.flywaydb.core.Flyway;
import org.junit.jupiter.api.Test;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.jdbc.autoconfigure.DataSourceAutoConfiguration;
import org.springframework.boot.sql.init.dependency.DependsOnDatabaseInitialization;
import org.springframework.boot.test.context.FilteredClassLoader;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.jdbc.core.JdbcTemplate;

/** How Leasehold's tables are created without Flyway, and in what order. */
class SchemaInitializationTest {

    private static ApplicationContextRunner h2() {
        return new ApplicationContextRunner()
                .withConfiguration(
                        AutoConfigurations.of(LeaseholdAutoConfigurations.with(DataSourceAutoConfiguration.class)))
                .withPropertyValues(
                        "spring.datasource.url=jdbc:h2:mem:schema-" + System.nanoTime() + ";DB_CLOSE_DELAY=-1",
                        "leasehold.stale-scan.enabled=false");
    }

    /** An application bean that reads Leasehold's tables as soon as it is created. */
    @Configuration(proxyBeanMethods = false)
    static class EarlyReader {
        @Bean
        @DependsOnDatabaseInitialization
        Integer leasesAtStartup(DataSource dataSource) {
            return new JdbcTemplate(dataSource).queryForObject("SELECT COUNT(*) FROM leasehold_lease", Integer.class);
        }
    }

    @Test
    void withoutFlywayBootsScriptInitializerCreatesTheTablesBeforeBeansThatDependOnThem() {
        h2().withClassLoader(new FilteredClassLoader(Flyway.class))
                .withUserConfiguration(EarlyReader.class)
                .run(context -> {
                    assertThat(context).hasNotFailed();
                    assertThat(context).hasSingleBean(LeaseholdScriptInitializer.class);
                    assertThat(context).doesNotHaveBean(LeaseholdFlywayMigration.class);
                    assertThat(context.getBean("leasesAtStartup", Integer.class))
                            .isZero();
                });
    }

    @Test
    void withFlywayLeaseholdsOwnMigrationRunsBeforeBeansThatDependOnIt() {
        h2().withUserConfiguration(EarlyReader.class).run(context -> {
            assertThat(context).hasNotFailed();
            assertThat(context).hasSingleBean(LeaseholdFlywayMigration.class);
            assertThat(context).doesNotHaveBean(LeaseholdScriptInitializer.class);
        });
    }

    @Test
    void laterMigrationsJoinTheSequenceAndLiteralsSurviveTheScriptRunner() {
        h2().withClassLoader(new FilteredClassLoader(Flyway.class)).run(context -> {
            JdbcTemplate jdbc = new JdbcTemplate(context.getBean(DataSource.class));
            assertThat(jdbc.queryForObject("SELECT text FROM leasehold_test_literal WHERE id = 1", String.class))
                    .isEqualTo("a;b -- not a comment");
        });
    }

    @Test
    void initializeSchemaNeverCreatesNothing() {
        for (FilteredClassLoader loader :
                new FilteredClassLoader[] {new FilteredClassLoader(Flyway.class), new FilteredClassLoader("none")}) {
            h2().withClassLoader(loader)
                    .withPropertyValues("leasehold.jdbc.initialize-schema=never")
                    .run(context -> {
                        assertThat(context).doesNotHaveBean(LeaseholdFlywayMigration.class);
                        JdbcTemplate jdbc = new JdbcTemplate(context.getBean(DataSource.class));
                        assertThat(jdbc.queryForObject(
                                        "SELECT COUNT(*) FROM INFORMATION_SCHEMA.TABLES WHERE TABLE_NAME LIKE 'LEASEHOLD%'",
                                        Integer.class))
                                .isZero();
                    });
        }
    }

    @Test
    void onAServerDatabaseTheScriptInitializerWaitsForAlways() {
        TestDatabases postgres = TestDatabases.postgres();
        try (postgres) {
            new ApplicationContextRunner()
                    .withConfiguration(
                            AutoConfigurations.of(LeaseholdAutoConfigurations.with(DataSourceAutoConfiguration.class)))
                    .withClassLoader(new FilteredClassLoader(Flyway.class))
                    .withPropertyValues(
                            "spring.datasource.url=" + postgres.url(),
                            "spring.datasource.username=" + postgres.user(),
                            "leasehold.stale-scan.enabled=false")
                    .run(context -> {
                        JdbcTemplate jdbc = new JdbcTemplate(context.getBean(DataSource.class));
                        assertThat(jdbc.queryForObject("SELECT to_regclass('leasehold_lease') IS NULL", Boolean.class))
                                .as("embedded (the default) leaves PostgreSQL alone")
                                .isTrue();
                    });
        }
    }
}
