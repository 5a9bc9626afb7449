package dev.leasehold.spring.schema;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatCode;

import dev.leasehold.jdbc.Database;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.Statement;
import org.junit.jupiter.api.Test;
import org.postgresql.ds.PGSimpleDataSource;
import org.springframework.boot.sql.init.DatabaseInitializationMode;

/**
 * Without Flyway ({@code leasehold.jdbc.initialize-schema=always}) the starter runs Leasehold's
 * scripts at every start. On PostgreSQL it leaves out 1.1's expiry index, which 1.4 drops again:
 * building it waits for every write in flight on {@code leasehold_lease} and blocks the writes after
 * it for the whole build. A start while a lease row is being written must not wait for it.
 */
class PostgresScriptInitializerTest {

    @Test
    void aStartWhileALeaseIsBeingWrittenBuildsNoExpiryIndex() throws Exception {
        try (TestDatabases postgres = TestDatabases.postgres()) {
            PGSimpleDataSource dataSource = new PGSimpleDataSource();
            dataSource.setURL(postgres.url());
            dataSource.setUser(postgres.user());
            dataSource.setPassword(postgres.password());
            dataSource.setOptions("-c lock_timeout=2000"); // a statement that waits for a lock fails
            new LeaseholdScriptInitializer(dataSource, Database.POSTGRESQL, DatabaseInitializationMode.ALWAYS)
                    .initializeDatabase();
            try (Connection writer = dataSource.getConnection();
                    Statement statement = writer.createStatement()) {
                writer.setAutoCommit(false);
                // an acquire in flight: a row-exclusive lock on leasehold_lease until it commits
                statement.execute("INSERT INTO leasehold_lease VALUES ('r:k', 'o', 1, 1, 1, 'h')");

                assertThatCode(() -> new LeaseholdScriptInitializer(
                                        dataSource, Database.POSTGRESQL, DatabaseInitializationMode.ALWAYS)
                                .initializeDatabase())
                        .as("a second start, while a lease row is being written")
                        .doesNotThrowAnyException();
                writer.rollback();
            }
            try (Connection connection = dataSource.getConnection();
                    Statement statement = connection.createStatement();
                    ResultSet index =
                            statement.executeQuery("SELECT count(*) FROM pg_indexes WHERE tablename = 'leasehold_lease'"
                                    + " AND indexname = 'leasehold_lease_expiry'")) {
                index.next();
                assertThat(index.getInt(1)).as("the expiry index").isZero();
            }
        }
    }
}
