package dev.leasehold.examples.loan;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.math.BigDecimal;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.LocalDate;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.function.Supplier;
import org.awaitility.Awaitility;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.MethodOrderer;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestMethodOrder;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.web.server.LocalServerPort;
import org.springframework.context.annotation.Import;
import org.springframework.security.provisioning.InMemoryUserDetailsManager;
import org.springframework.test.context.DynamicPropertyRegistry;
import org.springframework.test.context.DynamicPropertySource;

/**
 * The degrade switch (S2.14) when it is needed, and a lock store that is down: leases in a private
 * {@code redis-server} this test starts and stops on a free loopback port (never the shared one).
 * The service starts in bypass mode while that Redis is not running and takes repayments; races in
 * bypass mode end in 409 or an idempotent answer, never a 500; an admin switches to enforce, and
 * with Redis down every locked call fails fast with 503 and Retry-After while health says DOWN;
 * when Redis comes back, so does the service.
 */
@SpringBootTest(
        webEnvironment = SpringBootTest.WebEnvironment.RANDOM_PORT,
        properties = {
            "loan.demo.enabled=false",
            "loan.overdue.cron=-",
            "spring.datasource.url=jdbc:h2:mem:loan-outage;DB_CLOSE_DELAY=-1",
            "leasehold.backend=redis",
            "leasehold.lock.mode=bypass",
            "leasehold.redis.command-timeout=500ms",
            "leasehold.health.timeout=700ms"
        })
@Import(LoanTestSupport.class)
@TestMethodOrder(MethodOrderer.OrderAnnotation.class)
class RedisOutageTest {

    private static final int REDIS_PORT = freePort();
    private static final String KEY_PREFIX = "loan-outage-" + UUID.randomUUID() + ":";
    private static Process redis;

    @DynamicPropertySource
    static void privateRedis(DynamicPropertyRegistry registry) {
        registry.add("leasehold.redis.url", () -> "redis://127.0.0.1:" + REDIS_PORT);
        registry.add("leasehold.redis.key-prefix", () -> KEY_PREFIX);
    }

    @LocalServerPort
    int port;

    @Autowired
    LoanService loans;

    @Autowired
    LoanRepository repository;

    @Autowired
    InMemoryUserDetailsManager users;

    @Autowired
    ConcurrencyProbe probe;

    @Autowired
    org.springframework.jdbc.core.JdbcTemplate jdbc;

    Api api;
    Api admin;
    String tenant;

    @BeforeEach
    void tenant() {
        tenant = "r" + UUID.randomUUID().toString().substring(0, 8);
        repository.insertTenant(tenant, "outage tenant");
        LoanTestSupport.principals(users, tenant);
        LoanSecurity.addUser(users, tenant + "-admin", "admin-pw", null, "ADMIN");
        api = new Api(port, tenant);
        admin = new Api(port, tenant).as(tenant + "-admin", "admin-pw");
    }

    @AfterAll
    static void stopRedis() {
        if (redis != null) {
            redis.destroyForcibly();
        }
    }

    private String open(String customer) {
        String borrowNo = "B" + UUID.randomUUID().toString().substring(0, 10).toUpperCase();
        loans.open(
                tenant,
                borrowNo,
                customer,
                new BigDecimal("5000.00"),
                new BigDecimal("0.12"),
                12,
                LocalDate.now().minusMonths(2));
        return borrowNo;
    }

    private Api.Answer mode(String mode) {
        return admin.post("/actuator/leaseholdmode", Map.of("mode", mode, "reason", "outage drill"));
    }

    @Test
    @Order(1)
    void bypassModeStartsAndTakesRepaymentsWhileRedisIsDown() {
        assertThat(redis).as("the private Redis is not running yet").isNull();
        String note = open("C1");
        Api.Answer paid = api.repay(note, "T-1", "100.00");
        assertThat(paid.status()).as(paid.text()).isEqualTo(200);
        assertThat(api.get("/notes/" + note + "/conservation")
                        .body()
                        .get("holds")
                        .asBoolean())
                .isTrue();
    }

    /**
     * Bypass mode with the lock store down: the service serves, so the probes' groups stay UP while
     * the overall health and the store's own indicator say DOWN (for an alert, not for a probe).
     */
    @Test
    @Order(2)
    void inBypassModeWithTheStoreDownTheProbesStayUpAndTheStoresIndicatorIsDown() {
        assertProbes("bypass");
    }

    private void assertProbes(String mode) {
        assertThat(admin.getRaw("/actuator/leaseholdmode").body().get("mode").asString())
                .isEqualToIgnoringCase(mode);
        for (String probe : List.of("/actuator/health/liveness", "/actuator/health/readiness")) {
            Api.Answer answer = api.getRaw(probe);
            assertThat(answer.status())
                    .as(probe + " in " + mode + ": " + answer.text())
                    .isEqualTo(200);
            assertThat(answer.body().get("status").asString()).isEqualTo("UP");
        }
        Api.Answer store = api.getRaw("/actuator/health/leasehold");
        assertThat(store.status()).as(store.text()).isEqualTo(503);
        assertThat(store.body().get("status").asString()).isEqualTo("DOWN");
        Api.Answer health = api.getRaw("/actuator/health");
        assertThat(health.status()).as(health.text()).isEqualTo(503);
        assertThat(health.body().at("/components/leasehold/status").asString()).isEqualTo("DOWN");
    }

    @Test
    @Order(2)
    void racesInBypassModeEndIn409OrAnIdempotentAnswerNeverA500() throws Exception {
        String a = open("C7");
        String b = open("C7");
        List<Supplier<Api.Answer>> calls = new ArrayList<>();
        for (int i = 0; i < 4; i++) {
            calls.add(() -> api.overdueRun(LocalDate.now()));
            calls.add(() -> api.post(
                    "/customers/C7/batch-settlement",
                    Map.of("borrowNos", List.of(a, b), "channel", "COUNTER", "outTradeNo", "BATCH-1")));
            calls.add(() -> api.repay(a, "T-SAME", "10.00"));
        }
        // Every run holds the note a while before it looks for the day's penalty, so the runs overlap.
        probe.delay(Duration.ofMillis(100));
        CyclicBarrier start = new CyclicBarrier(calls.size());
        ExecutorService pool = Executors.newFixedThreadPool(calls.size());
        try {
            List<Future<Api.Answer>> answers = new ArrayList<>();
            for (Supplier<Api.Answer> call : calls) {
                answers.add(pool.submit(() -> {
                    start.await();
                    return call.get();
                }));
            }
            for (int i = 0; i < answers.size(); i++) {
                Api.Answer got = answers.get(i).get(60, TimeUnit.SECONDS);
                assertThat(got.status()).as(got.text()).isIn(200, 409, 422);
                if (i % 3 == 0) {
                    // an overdue run: every note gone through, a lost race on a day's charge is no failure
                    assertThat(got.body().get("processed").asInt()
                                    + got.body().get("failures").size())
                            .as(got.text())
                            .isEqualTo(got.body().get("notes").asInt());
                    for (tools.jackson.databind.JsonNode failure : got.body().get("failures")) {
                        assertThat(failure.get("problem").asString())
                                .as(got.text())
                                .isEqualTo("changed while processed; the next run picks it up");
                    }
                }
            }
        } finally {
            probe.delay(Duration.ZERO);
            pool.shutdownNow();
        }
        for (String n : List.of(a, b)) {
            assertThat(api.get("/notes/" + n + "/conservation")
                            .body()
                            .get("holds")
                            .asBoolean())
                    .isTrue();
        }
    }

    /**
     * Concurrent overdue runs in bypass mode: each note is charged the day's penalty once, and the
     * runs that lose the race for the charge's unique key count the note as done, never as failed.
     */
    @Test
    @Order(3)
    void concurrentOverdueRunsInBypassModeChargeEachNoteOnceAndFailNone() throws Exception {
        List<String> notes = List.of(open("C8"), open("C8"), open("C8"));
        int runs = 4;
        probe.delay(Duration.ofMillis(100)); // the runs overlap inside each note
        CyclicBarrier start = new CyclicBarrier(runs);
        ExecutorService pool = Executors.newFixedThreadPool(runs);
        try {
            List<Future<Api.Answer>> answers = new ArrayList<>();
            for (int i = 0; i < runs; i++) {
                answers.add(pool.submit(() -> {
                    start.await();
                    return api.overdueRun(LocalDate.now());
                }));
            }
            for (Future<Api.Answer> answer : answers) {
                Api.Answer got = answer.get(60, TimeUnit.SECONDS);
                assertThat(got.status()).as(got.text()).isEqualTo(200);
                assertThat(got.body().get("failures")).as(got.text()).isEmpty();
                assertThat(got.body().get("processed").asInt()).isEqualTo(notes.size());
            }
        } finally {
            probe.delay(Duration.ZERO);
            pool.shutdownNow();
        }
        for (String n : notes) {
            assertThat(jdbc.queryForObject(
                            "SELECT COUNT(*) FROM note_charge WHERE tenant_id = ? AND borrow_no = ? AND kind = 'PENALTY'",
                            Integer.class,
                            tenant,
                            n))
                    .as("one penalty for the day on " + n)
                    .isEqualTo(1);
            assertThat(api.get("/notes/" + n + "/conservation")
                            .body()
                            .get("holds")
                            .asBoolean())
                    .isTrue();
        }
    }

    @Test
    @Order(4)
    void withRedisDownEnforcedCallsFailFastWith503AndHealthSaysDown() {
        String note = open("C1");
        assertThat(mode("enforce").status()).isEqualTo(200);
        long started = System.nanoTime();
        Api.Answer answer = api.repay(note, "T-2", "10.00");
        long millis = (System.nanoTime() - started) / 1_000_000;
        assertThat(answer.status()).as(answer.text()).isEqualTo(503);
        assertThat(answer.header("Retry-After")).isNotBlank();
        assertThat(millis)
                .as("a bounded lock-store timeout, answered within about a second")
                .isLessThan(2_500);
        Api.Answer health = api.getRaw("/actuator/health");
        assertThat(health.status()).isEqualTo(503);
        assertThat(health.body().at("/components/leasehold/status").asString()).isEqualTo("DOWN");
        assertThat(api.get("/notes/" + note + "/repayments").body())
                .as("nothing booked")
                .isEmpty();
        // Every instance shares the store: taking this one out of service would not help, so the
        // probes stay UP in enforce mode too.
        assertProbes("enforce");
    }

    @Test
    @Order(5)
    void whenRedisComesBackSoDoesTheService() throws Exception {
        String note = open("C1");
        redis = startRedis(REDIS_PORT);
        Awaitility.await()
                .atMost(Duration.ofSeconds(20))
                .pollInterval(Duration.ofMillis(200))
                .until(() -> api.repay(note, "T-3", "10.00").status() == 200);
        assertThat(api.getRaw("/actuator/health")
                        .body()
                        .at("/components/leasehold/status")
                        .asString())
                .isEqualTo("UP");
        assertThat(mode("bypass").status()).isEqualTo(200);
        assertThat(mode("enforce").status()).isEqualTo(200);
    }

    @Test
    @Order(6)
    void repaymentsToNotesThatDoNotExistLeaveNothingInRedis() throws Exception {
        String note = open("C1");
        assertThat(api.repay(note, "T-4", "10.00").status()).isEqualTo(200);
        io.lettuce.core.RedisClient client = io.lettuce.core.RedisClient.create("redis://127.0.0.1:" + REDIS_PORT);
        try (var connection = client.connect()) {
            var redisCommands = connection.sync();
            List<String> before = redisCommands.keys(KEY_PREFIX + "*");
            for (int i = 0; i < 25; i++) {
                String unknown = "NOPE" + UUID.randomUUID().toString().substring(0, 8);
                assertThat(api.repay(unknown, "T-" + i, "5.00").status()).isEqualTo(404);
                Api stranger = new Api(port, "x" + UUID.randomUUID().toString().substring(0, 8));
                assertThat(stranger.repay(unknown, "T-" + i, "5.00").status()).isIn(401, 403);
            }
            assertThat(redisCommands.keys(KEY_PREFIX + "*"))
                    .as("no lease, fence or queue key for notes that do not exist")
                    .isSubsetOf(before);
        } finally {
            client.shutdown();
        }
    }

    private static int freePort() {
        try (ServerSocket socket = new ServerSocket(0)) {
            return socket.getLocalPort();
        } catch (IOException e) {
            throw new IllegalStateException(e);
        }
    }

    private static Process startRedis(int port) throws Exception {
        Process process = new ProcessBuilder(
                        "redis-server",
                        "--port",
                        String.valueOf(port),
                        "--bind",
                        "127.0.0.1",
                        "--save",
                        "",
                        "--appendonly",
                        "no")
                .redirectErrorStream(true)
                .redirectOutput(ProcessBuilder.Redirect.DISCARD)
                .start();
        Awaitility.await()
                .atMost(Duration.ofSeconds(10))
                .pollInterval(Duration.ofMillis(50))
                .until(() -> ping(port));
        return process;
    }

    private static boolean ping(int port) {
        try (Socket socket = new Socket("127.0.0.1", port)) {
            OutputStream out = socket.getOutputStream();
            out.write("PING\r\n".getBytes(StandardCharsets.US_ASCII));
            out.flush();
            InputStream in = socket.getInputStream();
            byte[] buffer = new byte[7];
            int read = in.read(buffer);
            return read > 0 && new String(buffer, 0, read, StandardCharsets.US_ASCII).startsWith("+PONG");
        } catch (IOException e) {
            return false;
        }
    }
}
