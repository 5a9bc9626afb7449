package dev.leasehold.idempotency;

import dev.leasehold.jdbc.Database;
import dev.leasehold.jdbc.JdbcSchema;
import java.sql.SQLException;
import javax.sql.DataSource;

/**
 * Creates the request and side-effect tables by running the bundled script ({@code V2}, beside the
 * lease tables' {@code V1} in {@link Database#migrationLocation()}), for tests and applications
 * without Flyway. Only creates what is missing.
 */
public final class IdempotencySchema {

    private IdempotencySchema() {}

    /**
     * Creates the lease, request and side-effect tables if they do not exist.
     *
     * @throws SQLException if a statement fails
     */
    public static void create(DataSource dataSource, Database database) throws SQLException {
        JdbcSchema.create(dataSource, database);
        JdbcSchema.runScript(dataSource, "/" + database.migrationLocation() + "/V2__leasehold_idempotency.sql");
    }
}
