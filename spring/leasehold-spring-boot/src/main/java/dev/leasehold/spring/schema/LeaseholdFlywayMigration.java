package dev.leasehold.spring.schema;

import dev.leasehold.jdbc.Database;
import javax.sql.DataSource;
import org.flywaydb.core.Flyway;
import org.flywaydb.core.api.output.MigrateResult;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.beans.factory.InitializingBean;

/**
 * Migrates Leasehold's tables with a Flyway instance of its own: its own history table ({@code
 * leasehold_schema_history} by default) and location ({@link LeaseholdMigrations}), so its versions
 * never meet the application's ({@code V1__} and Leasehold's {@code V1__} live side by side).
 *
 * <p>It runs after the application's Flyway migration and before every bean that depends on
 * database initialization. A schema that already holds the application's tables is baselined at
 * version 0, so Leasehold's migrations still all run; the application's Flyway, running first,
 * never finds Leasehold's tables in a schema it has not migrated yet. Scripts are applied out of
 * order, so that a schema of an earlier release takes every module's later scripts.
 */
public class LeaseholdFlywayMigration implements InitializingBean {

    private static final Logger log = LoggerFactory.getLogger(LeaseholdFlywayMigration.class);

    private final Flyway flyway;

    /** A migration of {@code database} with history in {@code table}. */
    public LeaseholdFlywayMigration(DataSource dataSource, Database database, String table) {
        this.flyway = Flyway.configure(LeaseholdFlywayMigration.class.getClassLoader())
                .dataSource(dataSource)
                .table(table)
                .locations(LeaseholdMigrations.location(database))
                .baselineOnMigrate(true)
                .baselineVersion("0")
                // Each module numbers its own scripts (1.x, 2.x, 3.x): a module's new script sorts
                // below versions other modules have already applied, and must still run on upgrade.
                .outOfOrder(true)
                .failOnMissingLocations(true)
                .load();
    }

    /** The Flyway instance, for {@code info()} or {@code validate()}. */
    public Flyway flyway() {
        return flyway;
    }

    @Override
    public void afterPropertiesSet() {
        MigrateResult result = flyway.migrate();
        log.info(
                "Leasehold schema at version {} ({} migrations applied, history in {})",
                result.targetSchemaVersion != null ? result.targetSchemaVersion : result.initialSchemaVersion,
                result.migrationsExecuted,
                flyway.getConfiguration().getTable());
    }
}
