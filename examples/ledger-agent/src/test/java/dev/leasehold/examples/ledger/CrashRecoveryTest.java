package dev.leasehold.examples.ledger;

import static dev.leasehold.examples.ledger.StubModel.booking;
import static dev.leasehold.examples.ledger.StubModel.text;
import static dev.leasehold.examples.ledger.StubModel.toolCalls;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import java.io.File;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.ServerSocket;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;
import org.h2.tools.Server;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.web.server.LocalServerPort;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.test.context.DynamicPropertyRegistry;
import org.springframework.test.context.DynamicPropertySource;
import org.springframework.web.client.RestClient;

/**
 * A service JVM killed ({@code SIGKILL}) between the two rounds of a two-round plan: lunch is booked
 * in round 1, the child dies while the model is asked for round 2. The same message resent to
 * another instance (this test's own application, on the same database) is recovered within
 * stale-after, resumes the persisted plan and books every item exactly once.
 */
@SpringBootTest(webEnvironment = SpringBootTest.WebEnvironment.RANDOM_PORT)
class CrashRecoveryTest {

    static final Duration STALE_AFTER = Duration.ofSeconds(2);
    static final StubModel STUB = new StubModel();
    static final String DATABASE;

    static {
        // One database for both JVMs: an H2 server in this JVM, so it outlives the killed child.
        int port = freePort();
        try {
            Server.createTcpServer("-tcpPort", String.valueOf(port), "-ifNotExists", "-tcpDaemon")
                    .start();
        } catch (java.sql.SQLException e) {
            throw new IllegalStateException(e);
        }
        DATABASE = "jdbc:h2:tcp://127.0.0.1:" + port + "/mem:ledger-crash;DB_CLOSE_DELAY=-1";
    }

    @DynamicPropertySource
    static void shared(DynamicPropertyRegistry registry) {
        registry.add("spring.datasource.url", () -> DATABASE);
        registry.add("leasehold.idempotency.stale-after", () -> STALE_AFTER.toMillis() + "ms");
        registry.add("ledger.model.base-url", STUB::baseUrl);
    }

    @AfterAll
    static void stop() {
        STUB.close();
    }

    @LocalServerPort
    int port;

    @Autowired
    JdbcTemplate jdbc;

    @Test
    void aServiceKilledBetweenTwoRoundsIsRecoveredWithinStaleAfterAndBooksEveryItemOnce() throws Exception {
        String id = "req-" + UUID.randomUUID();
        CountDownLatch inRoundTwo = new CountDownLatch(1);
        CountDownLatch never = new CountDownLatch(1);
        STUB.on(1, (r, attempt) -> toolCalls("c1", "create_transaction", booking("20", "餐饮", "lunch", null)))
                .on(2, (r, attempt) -> {
                    if (attempt == 1) {
                        inRoundTwo.countDown();
                        never.await(60, TimeUnit.SECONDS); // the child is killed while it waits here
                    }
                    return toolCalls("c2", "create_transaction", booking("30", "交通", "taxi", null));
                })
                .on(3, (r, attempt) -> text("Booked lunch 20 and taxi 30"));

        int childPort = freePort();
        Process child = startChild(childPort);
        ExecutorService pool = Executors.newSingleThreadExecutor();
        try {
            RestClient toChild = ChatHttp.as(childPort, "alice-token");
            await().atMost(Duration.ofSeconds(120))
                    .pollInterval(Duration.ofMillis(500))
                    .ignoreExceptions()
                    .until(() -> toChild.get().uri("/actuator/health").exchange((q, r) -> r.getStatusCode()
                                    .value())
                            == 200);
            String session = ChatHttp.newSession(toChild, "alice-ledger");
            pool.submit(() -> ChatHttp.send(toChild, session, "lunch 20, taxi 30", id));
            assertThat(inRoundTwo.await(60, TimeUnit.SECONDS)).isTrue();
            assertThat(ChatHttp.booked(jdbc, id, "lunch")).isEqualTo(1);
            assertThat(ChatHttp.booked(jdbc, id, "taxi")).isZero();

            child.destroyForcibly(); // SIGKILL: no finally, no release, no heartbeat any more
            assertThat(child.waitFor(30, TimeUnit.SECONDS)).isTrue();
            long killedAt = System.nanoTime();

            RestClient here = ChatHttp.as(port, "alice-token");
            List<String> refusals = new ArrayList<>();
            await().atMost(STALE_AFTER.plusSeconds(10))
                    .pollInterval(Duration.ofMillis(250))
                    .until(() -> {
                        ChatHttp.Result r = ChatHttp.send(here, session, "lunch 20, taxi 30", id);
                        if (r.status() != 200) {
                            refusals.add(r.status() + " " + r.body());
                        }
                        return r.status() == 200 && r.body().contains("Booked lunch 20 and taxi 30");
                    });
            Duration recovered = Duration.ofNanos(System.nanoTime() - killedAt);
            System.out.printf(
                    "crash recovery: answered %d ms after the kill (stale-after %d ms), refusals %s%n",
                    recovered.toMillis(), STALE_AFTER.toMillis(), refusals);
            assertThat(refusals)
                    .as("until stale-after only 'request in progress' is answered, never a dead holder's session")
                    .allMatch(r -> r.startsWith("409") && r.contains("do not resubmit"));
        } finally {
            never.countDown();
            child.destroyForcibly();
            pool.shutdownNow();
        }
        assertThat(ChatHttp.booked(jdbc, id, "lunch")).as("lunch exactly once").isEqualTo(1);
        assertThat(ChatHttp.booked(jdbc, id, "taxi")).as("taxi exactly once").isEqualTo(1);
        assertThat(ChatHttp.booked(jdbc, id)).isEqualTo(2);
        assertThat(STUB.asked(1))
                .as("round 1's persisted plan was resumed, not asked again")
                .isEqualTo(1);
    }

    /** The application in a child JVM on the same database and model, with this JVM's class path. */
    private static Process startChild(int port) throws IOException {
        String classPath = System.getProperty("surefire.test.class.path", System.getProperty("java.class.path"));
        String mainOnly = Arrays.stream(classPath.split(File.pathSeparator))
                .filter(entry -> !entry.endsWith("test-classes"))
                .collect(Collectors.joining(File.pathSeparator));
        Path log = Path.of("target", "crash-child.log");
        return new ProcessBuilder(
                        Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                        "-Xmx384m",
                        "-XX:TieredStopAtLevel=1",
                        "-XX:+UseSerialGC",
                        "-cp",
                        mainOnly,
                        LedgerAgentApplication.class.getName(),
                        "--server.port=" + port,
                        "--spring.datasource.url=" + DATABASE,
                        "--leasehold.idempotency.stale-after=" + STALE_AFTER.toMillis() + "ms",
                        "--ledger.model.base-url=" + STUB.baseUrl(),
                        "--ledger.model.timeout=60s",
                        "--spring.security.user.password=" + UUID.randomUUID(),
                        "--springdoc.api-docs.enabled=false")
                .redirectErrorStream(true)
                .redirectOutput(log.toFile())
                .start();
    }

    private static int freePort() {
        try (ServerSocket socket = new ServerSocket(0)) {
            return socket.getLocalPort();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }
}
