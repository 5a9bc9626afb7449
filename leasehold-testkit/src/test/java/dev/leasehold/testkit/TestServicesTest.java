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

    @Test
    void etcdIsFoundOrStartedAndAnswersItsHealthCheck() throws Exception {
        TestServices.EtcdEndpoint etcd = TestServices.etcd();
        assertThat(etcd.origin()).isIn("environment", "local", "started");
        java.net.http.HttpResponse<String> health = java.net.http.HttpClient.newHttpClient()
                .send(
                        java.net.http.HttpRequest.newBuilder(
                                        java.net.URI.create(etcd.endpoints().get(0) + "/health"))
                                .build(),
                        java.net.http.HttpResponse.BodyHandlers.ofString());
        assertThat(health.body()).contains("\"health\":\"true\"");
    }

    @Test
    void anEtcdClusterElectsANewLeaderWhenItsLeaderIsKilled() throws Exception {
        try (EtcdCluster cluster = TestServices.etcdCluster(3)) {
            int leader = cluster.awaitLeader(java.time.Duration.ofSeconds(20));
            cluster.kill(leader);
            int next = cluster.awaitLeader(java.time.Duration.ofSeconds(20));
            assertThat(next).isNotEqualTo(leader);
            cluster.restart(leader);
            assertThat(cluster.running(leader)).isTrue();
        }
    }

    private static void assertReachable(String jdbcUrl) throws IOException {
        java.net.URI uri = java.net.URI.create(jdbcUrl.substring("jdbc:".length()));
        try (Socket socket = new Socket()) {
            socket.connect(new InetSocketAddress(uri.getHost(), uri.getPort()), 2000);
            assertThat(socket.isConnected()).isTrue();
        }
    }
}
