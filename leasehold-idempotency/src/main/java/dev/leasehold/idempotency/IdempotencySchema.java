package dev.leasehold.idempotency;

import dev.leasehold.jdbc.Database;
import dev.leasehold.jdbc.JdbcSchema;
import java.sql.SQLException;
import java.util.List;
import javax.sql.DataSource;

/**
 * Creates the request and side-effect tables by running the bundled scripts ({@code V2} and {@code
 * V2_1}, beside the lease tables' {@code V1} in {@link Database#migrationLocation()}), for tests and
 * applications without Flyway. Only creates what is missing.
 */
public final class IdempotencySchema {

    /** The scripts of the records, in order. */
    static final List<String> SCRIPTS =
            List.of(IdempotencySchemaMissingException.MIGRATION, IdempotencySchemaMissingException.LATEST_MIGRATION);

    private IdempotencySchema() {}

    /**
     * Creates the lease, request and side-effect tables if they do not exist, and brings them to the
     * latest version.
     *
     * @throws SQLException if a statement fails
     */
    public static void create(DataSource dataSource, Database database) throws SQLException {
        JdbcSchema.create(dataSource, database);
        for (String script : SCRIPTS) {
            JdbcSchema.runScript(dataSource, "/" + database.migrationLocation() + "/" + script);
        }
    }
}
