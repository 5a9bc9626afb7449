package dev.leasehold.spring.schema;

import dev.leasehold.jdbc.Database;
import dev.leasehold.spring.LeaseholdAutoConfiguration;
import dev.leasehold.spring.LeaseholdProperties;
import java.sql.SQLException;
import javax.sql.DataSource;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnProperty;
import org.springframework.boot.sql.init.DatabaseInitializationMode;
import org.springframework.boot.sql.init.dependency.DatabaseInitializationDependencyConfigurer;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Conditional;
import org.springframework.context.annotation.Configuration;
import org.springframework.context.annotation.Import;

/**
 * Leasehold's tables: its own Flyway history when Flyway is on the class path, else Spring Boot's
 * script initializer; either runs before every bean that depends on database initialization.
 */
@AutoConfiguration(after = LeaseholdAutoConfiguration.class)
@ConditionalOnClass(
        name = {
            "dev.leasehold.jdbc.JdbcLeaseStore",
            "org.springframework.boot.jdbc.init.DataSourceScriptDatabaseInitializer"
        })
@ConditionalOnBean(DataSource.class)
@Import(DatabaseInitializationDependencyConfigurer.class)
public class LeaseholdSchemaAutoConfiguration {

    @Configuration(proxyBeanMethods = false)
    @ConditionalOnClass(name = "org.flywaydb.core.Flyway")
    @ConditionalOnProperty(prefix = "leasehold.jdbc.flyway", name = "enabled", matchIfMissing = true)
    @Conditional(SchemaConditions.Initialize.class)
    static class FlywaySchema {

        @Bean
        @ConditionalOnMissingBean
        LeaseholdFlywayMigration leaseholdFlywayMigration(DataSource dataSource, LeaseholdProperties properties)
                throws SQLException {
            return new LeaseholdFlywayMigration(
                    dataSource,
                    Database.detect(dataSource),
                    properties.getJdbc().getFlyway().getTable());
        }
    }

    @Configuration(proxyBeanMethods = false)
    @Conditional(SchemaConditions.WithoutFlyway.class)
    static class ScriptSchema {

        @Bean
        @ConditionalOnMissingBean
        LeaseholdScriptInitializer leaseholdScriptInitializer(DataSource dataSource, LeaseholdProperties properties)
                throws SQLException {
            return new LeaseholdScriptInitializer(
                    dataSource,
                    Database.detect(dataSource),
                    switch (properties.getJdbc().getInitializeSchema()) {
                        case EMBEDDED -> DatabaseInitializationMode.EMBEDDED;
                        case ALWAYS -> DatabaseInitializationMode.ALWAYS;
                        case NEVER -> DatabaseInitializationMode.NEVER;
                    });
        }
    }
}
