package dev.leasehold.idempotency;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import dev.leasehold.jdbc.Database;
import dev.leasehold.testkit.TestServices;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Duration;
import java.util.UUID;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/** Request and side-effect records on embedded H2. */
class H2IdempotencyTest extends AbstractIdempotencyTest {

    @Override
    protected TestServices.JdbcEndpoint endpoint() {
        return new TestServices.JdbcEndpoint(
                "jdbc:h2:mem:leasehold-idempotency;DB_CLOSE_DELAY=-1", "sa", "", "embedded");
    }

    @Override
    protected Database database() {
        return Database.H2;
    }

    /**
     * H2's lock wait is a session setting that SQL cannot read back: a heartbeat that changed it
     * would leave its short wait on the pooled connection, and the application's next statement on
     * that connection would give up after a few milliseconds behind any lock.
     */
    @Test
    void heartbeatLeavesTheSessionsLockWaitAsItWas() throws Exception {
        dataSource(); // the schema
        HikariConfig config = new HikariConfig();
        config.setJdbcUrl(endpoint().url() + ";LOCK_TIMEOUT=20000"); // the application's lock wait: 20 s
        config.setUsername(endpoint().user());
        config.setPassword(endpoint().password());
        config.setMaximumPoolSize(1); // the heartbeat and the application share the one session
        ExecutorService pool = Executors.newSingleThreadExecutor();
        try (HikariDataSource one = new HikariDataSource(config);
                Connection blocker = dataSource().getConnection()) {
            RequestRecords shortWait = RequestRecords.builder(one)
                    .database(Database.H2)
                    .staleAfter(Duration.ofMillis(400))
                    .heartbeatLockTimeout(Duration.ofMillis(50))
                    .build();
            Claim claim = shortWait.begin("lock-wait-" + UUID.randomUUID(), "k", CanonicalJson.fingerprint("{}"));
            RequestHandle handle = ((Claim.Claimed) claim).handle();
            assertThat(shortWait.heartbeat(handle)).isTrue();

            blocker.setAutoCommit(false);
            String update = "UPDATE leasehold_request SET updated_at_ms = updated_at_ms WHERE id = ?";
            try (PreparedStatement s = blocker.prepareStatement(update)) {
                s.setString(1, handle.id());
                s.executeUpdate();
            }
            Future<Integer> application = pool.submit(() -> {
                try (Connection c = one.getConnection();
                        PreparedStatement s = c.prepareStatement(update)) {
                    s.setString(1, handle.id());
                    return s.executeUpdate();
                }
            });
            int blockerSession = sessionId(blocker);
            await().atMost(Duration.ofSeconds(10)).until(() -> waitingBehind(blockerSession) || application.isDone());
            await().during(Duration.ofMillis(500))
                    .atMost(Duration.ofSeconds(5))
                    .alias("the application's statement waits with its own 20 s, not the heartbeat's 50 ms")
                    .until(() -> !application.isDone());
            blocker.rollback();
            assertThat(application.get(10, TimeUnit.SECONDS)).isEqualTo(1);
        } finally {
            pool.shutdownNow();
        }
    }

    private static int sessionId(Connection c) throws SQLException {
        try (PreparedStatement s = c.prepareStatement("SELECT SESSION_ID()");
                ResultSet rs = s.executeQuery()) {
            rs.next();
            return rs.getInt(1);
        }
    }

    private boolean waitingBehind(int blockerSession) throws SQLException {
        try (Connection c = dataSource().getConnection();
                PreparedStatement s =
                        c.prepareStatement("SELECT COUNT(*) FROM INFORMATION_SCHEMA.SESSIONS WHERE BLOCKER_ID = ?")) {
            s.setInt(1, blockerSession);
            try (ResultSet rs = s.executeQuery()) {
                rs.next();
                return rs.getInt(1) > 0;
            }
        }
    }
}
