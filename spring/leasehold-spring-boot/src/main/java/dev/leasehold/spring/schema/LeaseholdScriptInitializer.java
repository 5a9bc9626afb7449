package dev.leasehold.spring.schema;

import dev.leasehold.jdbc.Database;
import dev.leasehold.jdbc.JdbcSchema;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import javax.sql.DataSource;
import org.springframework.boot.jdbc.init.DataSourceScriptDatabaseInitializer;
import org.springframework.boot.sql.init.DatabaseInitializationMode;
import org.springframework.boot.sql.init.DatabaseInitializationSettings;
import org.springframework.core.io.ByteArrayResource;
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

    /**
     * Runs the scripts as {@link JdbcSchema#create} does: on PostgreSQL without 1.1's expiry index,
     * which 1.4 drops again (building it on a large table at every start would block its writes).
     */
    @Override
    protected void runScripts(Scripts scripts) {
        List<Resource> current = new ArrayList<>();
        for (Resource script : scripts) {
            current.add(current(script));
        }
        super.runScripts(new Scripts(current)
                .continueOnError(scripts.isContinueOnError())
                .separator(scripts.getSeparator())
                .encoding(scripts.getEncoding()));
    }

    private Resource current(Resource script) {
        String text;
        try (java.io.InputStream in = script.getInputStream()) {
            text = new String(in.readAllBytes(), StandardCharsets.UTF_8);
        } catch (java.io.IOException e) {
            throw new java.io.UncheckedIOException(e);
        }
        String now = JdbcSchema.withoutSuperseded(database, text);
        if (now.equals(text)) {
            return script;
        }
        return new ByteArrayResource(now.getBytes(StandardCharsets.UTF_8), String.valueOf(script.getFilename()));
    }

    @Override
    protected boolean isEmbeddedDatabase() {
        return database == Database.H2;
    }
}
