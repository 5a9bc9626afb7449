package dev.leasehold.spring.retry;

import static org.assertj.core.api.Assertions.assertThat;

import dev.leasehold.jdbc.Database;
import dev.leasehold.spring.schema.TestDatabases;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import javax.sql.DataSource;
import org.h2.jdbcx.JdbcDataSource;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;
import org.postgresql.ds.PGSimpleDataSource;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.jdbc.datasource.DriverManagerDataSource;

/**
 * The database queue's claims, driven step by step on H2, PostgreSQL and MariaDB with the poller not
 * started: one {@link JdbcRetryQueue#poll} per step, the other instance's moves written to the
 * table as that instance would write them.
 */
class JdbcRetryQueueTest {

    private static final Duration LONG = Duration.ofHours(1);

    private final List<Runnable> cleanups = new CopyOnWriteArrayList<>();

    @AfterEach
    void cleanUp() {
        cleanups.forEach(Runnable::run);
    }

    private DataSource dataSource(Database database) throws SQLException, IOException {
        DataSource dataSource;
        if (database == Database.H2) {
            JdbcDataSource h2 = new JdbcDataSource();
            h2.setURL("jdbc:h2:mem:retry-queue-" + UUID.randomUUID() + ";DB_CLOSE_DELAY=-1");
            dataSource = h2;
        } else if (database == Database.MARIADB) {
            TestDatabases mariadb = TestDatabases.mariadb();
            cleanups.add(mariadb::close);
            dataSource = new DriverManagerDataSource(mariadb.url(), mariadb.user(), mariadb.password());
        } else {
            String schema = "retry_queue_" + UUID.randomUUID().toString().replace("-", "");
            PGSimpleDataSource pg = new PGSimpleDataSource();
            pg.setURL("jdbc:postgresql://127.0.0.1:5432/test");
            pg.setUser("postgres");
            new JdbcTemplate(pg).execute("CREATE SCHEMA " + schema);
            cleanups.add(() -> new JdbcTemplate(pg).execute("DROP SCHEMA " + schema + " CASCADE"));
            PGSimpleDataSource inSchema = new PGSimpleDataSource();
            inSchema.setURL("jdbc:postgresql://127.0.0.1:5432/test");
            inSchema.setUser("postgres");
            inSchema.setCurrentSchema(schema);
            dataSource = inSchema;
        }
        try (Connection c = dataSource.getConnection();
                Statement s = c.createStatement()) {
            for (String file : List.of("V3__leasehold_retry.sql", "V3_1__leasehold_retry_claim_token.sql")) {
                for (String sql : script(database.migrationLocation() + "/" + file)) {
                    s.execute(sql);
                }
            }
        }
        return dataSource;
    }

    private static List<String> script(String resource) throws IOException {
        try (InputStream in = JdbcRetryQueueTest.class.getClassLoader().getResourceAsStream(resource)) {
            String text = new String(in.readAllBytes(), StandardCharsets.UTF_8).replaceAll("--[^\n]*", "");
            return List.of(text.split(";")).stream()
                    .map(String::trim)
                    .filter(sql -> !sql.isEmpty())
                    .toList();
        }
    }

    private static JdbcRetryQueue queue(DataSource dataSource, Database database, Duration claimTimeout) {
        return new JdbcRetryQueue(dataSource, database, LONG, claimTimeout, LONG);
    }

    private static RetryTask task(String name) {
        return new RetryTask(RetryTask.keyOf(name), "bean", "method", List.of(), "[]", "lock:" + name, 1);
    }

    private static Map<String, Object> row(JdbcTemplate jdbc, String id) {
        return jdbc.queryForMap("SELECT status, claim_token, due_at_ms FROM leasehold_retry WHERE id = ?", id);
    }

    private static long dbNow(JdbcTemplate jdbc, Database database) {
        return jdbc.queryForObject("SELECT " + database.nowMillisSql(), Long.class);
    }

    @ParameterizedTest
    @EnumSource(
            value = Database.class,
            names = {"H2", "POSTGRESQL", "MARIADB"})
    void aRowRescheduledIntoTheFutureBetweenSelectAndClaimIsNotClaimed(Database database) throws Exception {
        DataSource dataSource = dataSource(database);
        JdbcTemplate jdbc = new JdbcTemplate(dataSource);
        JdbcRetryQueue queue = queue(dataSource, database, LONG);
        RetryTask x = task("x");
        RetryTask y = task("y");
        queue.enqueue(x, Duration.ZERO);
        queue.enqueue(y, Duration.ZERO);
        List<String> handled = new CopyOnWriteArrayList<>();

        int count = queue.poll(task -> {
            if (handled.isEmpty()) {
                // Meanwhile another instance claimed the other row, found it busy and put it back
                // PENDING with a backoff: both rows were selected as due by this poll already.
                String other = task.key().equals(x.key()) ? y.key() : x.key();
                jdbc.update(
                        "UPDATE leasehold_retry SET status = 'PENDING', claim_token = NULL, claimed_at_ms = NULL,"
                                + " attempts = 2, due_at_ms = " + database.nowMillisSql() + " + 3600000 WHERE id = ?",
                        other);
            }
            handled.add(task.key());
        });

        assertThat(handled).as("only the row still due ran").hasSize(1);
        assertThat(count).isEqualTo(1);
        String other = handled.get(0).equals(x.key()) ? y.key() : x.key();
        Map<String, Object> row = row(jdbc, other);
        assertThat(row.get("status"))
                .as("the rescheduled row waits for its backoff")
                .isEqualTo("PENDING");
        assertThat(((Number) row.get("due_at_ms")).longValue()).isGreaterThan(dbNow(jdbc, database));
    }

    @ParameterizedTest
    @EnumSource(
            value = Database.class,
            names = {"H2", "POSTGRESQL", "MARIADB"})
    void afterAResetOfAnAbandonedClaimItsOldTokenSettlesNothing(Database database) throws Exception {
        DataSource dataSource = dataSource(database);
        JdbcTemplate jdbc = new JdbcTemplate(dataSource);
        JdbcRetryQueue stale = queue(dataSource, database, LONG);
        JdbcRetryQueue other = queue(dataSource, database, Duration.ofMinutes(1));
        RetryTask x = task("x");
        stale.enqueue(x, Duration.ZERO);
        CountDownLatch running = new CountDownLatch(1);
        CountDownLatch resume = new CountDownLatch(1);
        Thread handler = new Thread(() -> stale.poll(task -> {
            running.countDown();
            assertThat(resume.await(30, TimeUnit.SECONDS)).isTrue();
        }));
        handler.start();
        assertThat(running.await(30, TimeUnit.SECONDS)).isTrue();
        // The stale instance stopped renewing (paused): its claim is abandoned. The row's backoff
        // keeps the resetting instance from claiming it in the same poll.
        jdbc.update(
                "UPDATE leasehold_retry SET claimed_at_ms = 0, due_at_ms = due_at_ms + 3600000 WHERE id = ?", x.key());
        other.poll(task -> {
            throw new AssertionError("not due");
        });
        assertThat(row(jdbc, x.key()).get("status")).isEqualTo("PENDING");
        assertThat(row(jdbc, x.key()).get("claim_token"))
                .as("the reset drops the old claim")
                .isNull();
        // An instance that claims without writing a token (an earlier version) runs the row now.
        jdbc.update(
                "UPDATE leasehold_retry SET status = 'RUNNING', claimed_at_ms = " + database.nowMillisSql()
                        + " WHERE id = ? AND status = 'PENDING'",
                x.key());

        resume.countDown(); // the stale handler returns and settles with its old token
        handler.join(30_000);

        assertThat(jdbc.queryForObject("SELECT COUNT(*) FROM leasehold_retry WHERE id = ?", Integer.class, x.key()))
                .as("the stale delivery did not delete the row another instance runs")
                .isEqualTo(1);
        assertThat(row(jdbc, x.key()).get("status")).isEqualTo("RUNNING");
    }

    @ParameterizedTest
    @EnumSource(
            value = Database.class,
            names = {"H2", "POSTGRESQL", "MARIADB"})
    void parkingARowThatAnotherDeliveryCompletedAndDeletedBringsNothingBack(Database database) throws Exception {
        DataSource dataSource = dataSource(database);
        JdbcTemplate jdbc = new JdbcTemplate(dataSource);
        JdbcRetryQueue queue = queue(dataSource, database, LONG);
        RetryTask x = task("x");
        queue.enqueue(x, Duration.ZERO);

        int count = queue.poll(task -> {
            // Meanwhile another instance reset this claim, claimed the row, ran it and deleted it.
            jdbc.update("DELETE FROM leasehold_retry WHERE id = ?", task.key());
            queue.park(task.nextAttempt(), "gave up after too many attempts");
        });

        assertThat(count).isEqualTo(1);
        assertThat(jdbc.queryForList("SELECT status FROM leasehold_retry WHERE id = ?", String.class, x.key()))
                .as("a task completed elsewhere neither runs again nor waits for an operator")
                .isEmpty();
    }

    @ParameterizedTest
    @EnumSource(
            value = Database.class,
            names = {"H2", "POSTGRESQL", "MARIADB"})
    void parkingOutsideAHandlerStoresTheTaskAsFailed(Database database) throws Exception {
        DataSource dataSource = dataSource(database);
        JdbcTemplate jdbc = new JdbcTemplate(dataSource);
        JdbcRetryQueue queue = queue(dataSource, database, LONG);
        RetryTask x = task("x");

        queue.park(x, "refused");

        assertThat(row(jdbc, x.key()).get("status")).isEqualTo("FAILED");
    }
}
