package dev.leasehold.jdbc;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.List;
import javax.sql.DataSource;

/**
 * Creates Leasehold's tables by running the bundled schema script, for tests and applications that
 * do not use Flyway. The script only creates what is missing, so running it again is harmless.
 */
public final class JdbcSchema {

    private JdbcSchema() {}

    /** The scripts of this module, in version order (Flyway versions 1, 1.1, 1.2, 1.3, ...). */
    static final List<String> SCRIPTS = List.of(
            "V1__leasehold_tables.sql",
            "V1_1__leasehold_fence_owner_and_expiry_index.sql",
            "V1_2__leasehold_exact_keys_and_owners.sql",
            "V1_3__leasehold_waiter_queue.sql");

    /**
     * Creates the lease and fence tables if they do not exist, and brings them to this version
     * (every script of this module, in version order).
     *
     * @throws SQLException if a statement fails
     */
    public static void create(DataSource dataSource, Database database) throws SQLException {
        for (String script : SCRIPTS) {
            runScript(dataSource, "/" + database.migrationLocation() + "/" + script);
        }
    }

    /**
     * Runs a schema script from the class path: statements separated by {@code ;}, {@code --}
     * comments ignored. For Leasehold's own scripts, which only create what is missing.
     *
     * @throws SQLException if a statement fails
     */
    public static void runScript(DataSource dataSource, String classpathResource) throws SQLException {
        try (Connection connection = dataSource.getConnection();
                Statement statement = connection.createStatement()) {
            for (String sql : statements(classpathResource)) {
                statement.execute(sql);
            }
            if (!connection.getAutoCommit()) {
                connection.commit();
            }
        }
    }

    /** The statements of the bundled script, comments removed. */
    static List<String> statements(String resource) {
        String script;
        try (InputStream in = JdbcSchema.class.getResourceAsStream(resource)) {
            if (in == null) {
                throw new IllegalStateException("schema script " + resource + " is missing from the classpath");
            }
            script = new String(in.readAllBytes(), StandardCharsets.UTF_8);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        StringBuilder withoutComments = new StringBuilder();
        for (String line : script.split("\n")) {
            int comment = line.indexOf("--");
            withoutComments
                    .append(comment >= 0 ? line.substring(0, comment) : line)
                    .append('\n');
        }
        List<String> statements = new ArrayList<>();
        for (String sql : withoutComments.toString().split(";")) {
            if (!sql.isBlank()) {
                statements.add(sql.trim());
            }
        }
        return statements;
    }
}
