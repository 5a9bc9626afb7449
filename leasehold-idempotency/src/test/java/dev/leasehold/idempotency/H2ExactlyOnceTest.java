package dev.leasehold.idempotency;

import dev.leasehold.jdbc.Database;
import dev.leasehold.testkit.TestServices;
import java.sql.SQLException;
import org.h2.tools.Server;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;

/** Exactly once on H2, served over TCP so that a child JVM shares the in-memory database. */
class H2ExactlyOnceTest extends AbstractExactlyOnceTest {

    private static Server server;

    @BeforeAll
    static void startServer() throws SQLException {
        server = Server.createTcpServer("-tcpPort", "0", "-ifNotExists").start();
    }

    @AfterAll
    static void stopServer() {
        closePools();
        server.stop();
    }

    @Override
    protected TestServices.JdbcEndpoint endpoint() {
        return new TestServices.JdbcEndpoint(
                "jdbc:h2:tcp://127.0.0.1:" + server.getPort() + "/mem:leasehold-exactly-once;DB_CLOSE_DELAY=-1",
                "sa",
                "",
                "h2 tcp");
    }

    @Override
    protected Database database() {
        return Database.H2;
    }
}
