package dev.leasehold.testkit;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.Socket;
import org.junit.jupiter.api.Test;

/** TestServices hands out servers that answer, or skips with a message naming the service. */
class TestServicesTest {

    @Test
    void redisIsFoundOrStartedAndAnswersPing() {
        TestServices.RedisEndpoint redis = TestServices.redis();
        assertThat(TestServices.redisAnswers(redis.host(), redis.port())).isTrue();
        assertThat(redis.uri()).startsWith("redis://");
        assertThat(redis.origin()).isIn("environment", "local", "embedded");
    }

    @Test
    void postgresEndpointAcceptsConnections() throws IOException {
        TestServices.JdbcEndpoint postgres = TestServices.postgres();
        assertThat(postgres.url()).startsWith("jdbc:postgresql:");
        assertReachable(postgres.url());
    }

    @Test
    void mariadbEndpointAcceptsConnections() throws IOException {
        TestServices.JdbcEndpoint mariadb = TestServices.mariadb();
        assertThat(mariadb.url()).matches("jdbc:(mariadb|mysql):.*");
        assertReachable(mariadb.url());
    }

    private static void assertReachable(String jdbcUrl) throws IOException {
        java.net.URI uri = java.net.URI.create(jdbcUrl.substring("jdbc:".length()));
        try (Socket socket = new Socket()) {
            socket.connect(new InetSocketAddress(uri.getHost(), uri.getPort()), 2000);
            assertThat(socket.isConnected()).isTrue();
        }
    }
}
