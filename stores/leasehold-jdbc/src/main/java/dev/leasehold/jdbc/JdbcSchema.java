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
 *
 * <p>A {@link JdbcLeaseStore} whose tables are missing (or older than its version) says so at its
 * first operation: a {@link SchemaMissingException} naming the missing table and both ways to
 * create the schema, this class and the Flyway scripts, instead of a store failure carrying the
 * database's SQL text.
 */
public final class JdbcSchema {

    private JdbcSchema() {}

    /** The scripts of this module for every database, in version order (Flyway versions 1, 1.1, 1.2, 1.3). */
    static final List<String> SCRIPTS = List.of(
            "V1__leasehold_tables.sql",
            "V1_1__leasehold_fence_owner_and_expiry_index.sql",
            "V1_2__leasehold_exact_keys_and_owners.sql",
            "V1_3__leasehold_waiter_queue.sql");

    /**
     * Creates the lease and fence tables if they do not exist, and brings them to this version
     * (every script of this module for the database, in version order).
     *
     * @throws SQLException if a statement fails
     */
    public static void create(DataSource dataSource, Database database) throws SQLException {
        for (String script : scripts(database)) {
            String resource = "/" + database.migrationLocation() + "/" + script;
            run(dataSource, statementsOf(withoutSuperseded(database, text(resource))));
        }
    }

    /**
     * The scripts of {@code database}, in version order: {@link #SCRIPTS}, and on PostgreSQL 1.4,
     * which drops the expiry index 1.1 created.
     */
    static List<String> scripts(Database database) {
        if (database != Database.POSTGRESQL) {
            return SCRIPTS;
        }
        List<String> scripts = new ArrayList<>(SCRIPTS);
        scripts.add(POSTGRES_IN_PLACE_UPDATES);
        return List.copyOf(scripts);
    }

    /** PostgreSQL 1.4: drops the expiry index, so acquires and releases update rows in place. */
    static final String POSTGRES_IN_PLACE_UPDATES = "V1_4__leasehold_lease_in_place_updates.sql";

    /**
     * The statement of PostgreSQL's 1.1 that 1.4 undoes ({@link #withoutSuperseded}).
     */
    private static final String POSTGRES_EXPIRY_INDEX =
            "CREATE INDEX IF NOT EXISTS leasehold_lease_expiry ON leasehold_lease (expires_at_ms)";

    /**
     * The text of one of this module's scripts as a runner other than {@link #create} should run it
     * on every start (Spring Boot's script initializer, for example): the script unchanged, except on
     * PostgreSQL without 1.1's expiry index, which 1.4 drops again. Building that index on a large
     * table would block its writes at every start.
     *
     * @param database the database the script is for
     * @param script the script's text
     */
    public static String withoutSuperseded(Database database, String script) {
        if (database != Database.POSTGRESQL) {
            return script;
        }
        return script.lines()
                .filter(line -> !normalized(line.replace(";", "")).equals(POSTGRES_EXPIRY_INDEX))
                .collect(java.util.stream.Collectors.joining("\n", "", "\n"));
    }

    private static String normalized(String sql) {
        return sql.strip().replaceAll("\\s+", " ");
    }

    /**
     * Runs a schema script from the class path: statements separated by {@code ;}, {@code --}
     * comments ignored. For Leasehold's own scripts, which only create what is missing.
     *
     * @throws SQLException if a statement fails
     */
    public static void runScript(DataSource dataSource, String classpathResource) throws SQLException {
        run(dataSource, statementsOf(text(classpathResource)));
    }

    private static void run(DataSource dataSource, List<String> statements) throws SQLException {
        try (Connection connection = dataSource.getConnection();
                Statement statement = connection.createStatement()) {
            for (String sql : statements) {
                statement.execute(sql);
            }
            if (!connection.getAutoCommit()) {
                connection.commit();
            }
        }
    }

    /**
     * The failure as what it says about the schema: a {@link SchemaMissingException} naming the
     * missing table or column and how to create the schema, or null when {@code e} is not about a
     * missing table or column (PostgreSQL 42P01/42703, MariaDB 1146/1054, H2 42S02 to 42S04/42S22).
     */
    static SchemaMissingException missing(SQLException e, Database database) {
        String state = e.getSQLState() == null ? "" : e.getSQLState();
        boolean missing = state.equals("42P01")
                || state.equals("42703")
                || state.matches("42S0[234]|42S22")
                || e.getErrorCode() == 1146
                || e.getErrorCode() == 1054;
        if (!missing) {
            return null;
        }
        String said = String.valueOf(e.getMessage()).split("\n", 2)[0];
        int sql = said.indexOf("; SQL statement");
        said = sql >= 0 ? said.substring(0, sql) : said;
        said = said.length() > 160 ? said.substring(0, 160) + "..." : said;
        String location = database.migrationLocation();
        return new SchemaMissingException(
                "the SQL lease store's tables are missing or older than this version"
                        + " (the database said: " + said.strip() + "); create them before the first lock with"
                        + " JdbcSchema.create(dataSource, Database." + database.name() + "), or with Flyway from"
                        + " classpath:" + location + " (Spring Boot: leasehold.jdbc.initialize-schema=always)",
                e);
    }

    /** The text of a bundled script on the class path. */
    private static String text(String resource) {
        try (InputStream in = JdbcSchema.class.getResourceAsStream(resource)) {
            if (in == null) {
                throw new IllegalStateException("schema script " + resource + " is missing from the classpath");
            }
            return new String(in.readAllBytes(), StandardCharsets.UTF_8);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /** The statements of a script's text, comments removed. */
    private static List<String> statementsOf(String script) {
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
