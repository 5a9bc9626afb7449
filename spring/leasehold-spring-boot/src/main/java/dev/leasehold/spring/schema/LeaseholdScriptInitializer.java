package dev.leasehold.spring.schema;

import dev.leasehold.jdbc.Database;
import java.util.List;
import javax.sql.DataSource;
import org.springframework.boot.jdbc.init.DataSourceScriptDatabaseInitializer;
import org.springframework.boot.sql.init.DatabaseInitializationMode;
import org.springframework.boot.sql.init.DatabaseInitializationSettings;
import org.springframework.core.io.Resource;

/**
 * Creates Leasehold's tables with Spring Boot's script initializer, for applications without
 * Flyway: Leasehold's migrations ({@link LeaseholdMigrations}) run in version order through Spring's
 * script runner (which understands quoted literals and comments), before every bean that depends on
 * database initialization. "Embedded" means H2, in memory or in a file.
 */
public class LeaseholdScriptInitializer extends DataSourceScriptDatabaseInitializer {

    private final Database database;

    /** An initializer for {@code database} in {@code mode}. */
    public LeaseholdScriptInitializer(DataSource dataSource, Database database, DatabaseInitializationMode mode) {
        super(dataSource, settings(database, mode));
        this.database = database;
    }

    private static DatabaseInitializationSettings settings(Database database, DatabaseInitializationMode mode) {
        DatabaseInitializationSettings settings = new DatabaseInitializationSettings();
        List<String> locations =
                LeaseholdMigrations.scripts(database, LeaseholdScriptInitializer.class.getClassLoader()).stream()
                        .map(LeaseholdScriptInitializer::location)
                        .toList();
        settings.setSchemaLocations(locations);
        settings.setMode(mode);
        settings.setContinueOnError(false);
        return settings;
    }

    private static String location(Resource script) {
        try {
            return script.getURL().toString();
        } catch (java.io.IOException e) {
            throw new java.io.UncheckedIOException(e);
        }
    }

    @Override
    protected boolean isEmbeddedDatabase() {
        return database == Database.H2;
    }
}
