package dev.leasehold.spring.it;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;
import static org.springframework.test.web.servlet.request.MockMvcRequestBuilders.get;
import static org.springframework.test.web.servlet.request.MockMvcRequestBuilders.post;
import static org.springframework.test.web.servlet.result.MockMvcResultMatchers.header;
import static org.springframework.test.web.servlet.result.MockMvcResultMatchers.jsonPath;
import static org.springframework.test.web.servlet.result.MockMvcResultMatchers.status;

import dev.leasehold.Lease;
import dev.leasehold.LeaseOptions;
import dev.leasehold.LockKey;
import dev.leasehold.LockOwner;
import dev.leasehold.LockService;
import dev.leasehold.spring.actuator.LeaseholdMetricNames;
import dev.leasehold.spring.lock.LockModeSwitch;
import io.micrometer.core.instrument.MeterRegistry;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.system.CapturedOutput;
import org.springframework.boot.test.system.OutputCaptureExtension;
import org.springframework.boot.webmvc.test.autoconfigure.AutoConfigureMockMvc;
import org.springframework.http.MediaType;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.test.web.servlet.MockMvc;
import org.springframework.test.web.servlet.MvcResult;

/**
 * The starter in a real Boot application on real PostgreSQL (and Redis in the subclass that picks
 * it): @Locked, lock outside the transaction, @Idempotent over HTTP, problem responses, metrics,
 * audit, actuator endpoints, degrade switch, delayed retries and the stale scan.
 */
@SpringBootTest(
        classes = TestApp.class,
        properties = {
            "management.endpoints.web.exposure.include=leasehold,leaseholdmode,health",
            "leasehold.jdbc.initialize-schema=always",
            "spring.flyway.enabled=false",
            "leasehold.jdbc.flyway.enabled=false",
            "leasehold.retry.poll-interval=200ms",
            "leasehold.retry.initial-delay=300ms",
            "leasehold.lock.lease-time=5s",
            "spring.datasource.hikari.maximum-pool-size=20"
        })
@AutoConfigureMockMvc
@ExtendWith(OutputCaptureExtension.class)
abstract class AbstractStarterIntegrationTest {

    @Autowired
    MockMvc mvc;

    @Autowired
    Accounts accounts;

    @Autowired
    PaymentsController payments;

    @Autowired
    LockService locks;

    @Autowired
    LockModeSwitch mode;

    @Autowired
    MeterRegistry meters;

    @Autowired
    JdbcTemplate jdbc;

    String account;

    @BeforeEach
    void openAccount() {
        jdbc.execute("CREATE TABLE IF NOT EXISTS it_account (id VARCHAR(64) PRIMARY KEY, balance BIGINT NOT NULL)");
        account = "A" + UUID.randomUUID().toString().substring(0, 8);
        accounts.open(account, 0);
    }

    private Lease holdElsewhere(String id) {
        return locks.tryAcquire(
                        LockKey.ofTenant("acct", "t1", id), LeaseOptions.defaults(), LockOwner.create("elsewhere"))
                .orElseThrow();
    }

    // ------------------------------------------------------------------ @Locked

    @Test
    void busyKeyIsA409ProblemWithTheFriendlyMessage() throws Exception {
        try (Lease held = holdElsewhere(account)) {
            assertThat(held.isHeld()).isTrue();
            mvc.perform(post("/accounts/" + account + "/deposits")
                            .contentType(MediaType.APPLICATION_JSON)
                            .content("{\"amount\":5}"))
                    .andExpect(status().isConflict())
                    .andExpect(header().string("Retry-After", "1"))
                    .andExpect(header().string("Content-Type", "application/problem+json"))
                    .andExpect(jsonPath("$.type").value("https://leasehold.dev/problems/lock-busy"))
                    .andExpect(jsonPath("$.detail").value("account " + account + " is being processed, retry later"));
            assertThat(held.isHeld()).isTrue();
        }
        assertThat(accounts.balance(account)).isZero();
        assertThat(meters.find(LeaseholdMetricNames.LOCK_WAIT)
                        .tag("namespace", "acct")
                        .tag("outcome", "busy")
                        .timer())
                .isNotNull()
                .satisfies(t -> assertThat(t.count()).isPositive());
        assertThat(meters.find("leasehold.lock.busy").meter())
                .as("conflicts are counted once, by the wait timer")
                .isNull();
    }

    @Test
    void blankKeyPartIs400AndNothingIsLocked() throws Exception {
        mvc.perform(post("/accounts/{id}/deposits", " ")
                        .contentType(MediaType.APPLICATION_JSON)
                        .content("{\"amount\":5}"))
                .andExpect(status().isBadRequest())
                .andExpect(jsonPath("$.type").value("https://leasehold.dev/problems/invalid-lock-key"));
        assertThat(locks.heldLeases()).isEmpty();
    }

    @Test
    void concurrentReadModifyWritesUnderTheLockNeverLoseAnUpdate() throws Exception {
        ExecutorService pool = Executors.newFixedThreadPool(8);
        try {
            List<Future<?>> done = new ArrayList<>();
            for (int t = 0; t < 8; t++) {
                done.add(pool.submit(() -> {
                    for (int i = 0; i < 10; i++) {
                        accounts.add("t1", account, 1);
                    }
                    return null;
                }));
            }
            for (Future<?> f : done) {
                f.get(120, TimeUnit.SECONDS);
            }
        } finally {
            pool.shutdownNow();
        }
        assertThat(accounts.balance(account)).isEqualTo(80);
    }

    @Test
    void leaseIsReleasedOnlyAfterTheTransactionCommitted() {
        TestApp.SEEN_AT_RELEASE.clear();
        accounts.add("t1", account, 7);
        assertThat(TestApp.SEEN_AT_RELEASE)
                .as("a fresh connection at release time sees the commit")
                .contains(account + "=7");
    }

    @Test
    void insideACallersTransactionTheReleaseWaitsForItsCommit() {
        TestApp.SEEN_AT_RELEASE.clear();
        accounts.addInsideCallerTransaction(accounts, "t1", account);
        assertThat(TestApp.SEEN_AT_RELEASE)
                .as("released after the outer transaction wrote 1000 more and committed")
                .containsExactly(account + "=1001");
    }

    @Test
    void batchesInOppositeOrdersNeverDeadlock() throws Exception {
        String other = "B" + UUID.randomUUID().toString().substring(0, 8);
        accounts.open(other, 0);
        ExecutorService pool = Executors.newFixedThreadPool(2);
        try {
            List<String> forward = List.of(account, other);
            List<String> backward = new ArrayList<>(forward);
            Collections.reverse(backward);
            Future<?> a = pool.submit(() -> {
                for (int i = 0; i < 15; i++) {
                    accounts.addToAll("t1", forward, 1);
                }
            });
            Future<?> b = pool.submit(() -> {
                for (int i = 0; i < 15; i++) {
                    accounts.addToAll("t1", backward, 1);
                }
            });
            a.get(60, TimeUnit.SECONDS);
            b.get(60, TimeUnit.SECONDS);
        } finally {
            pool.shutdownNow();
        }
        assertThat(accounts.balance(account)).isEqualTo(30);
        assertThat(accounts.balance(other)).isEqualTo(30);
    }

    @Test
    void busyBackgroundCallIsRetriedLaterAndNothingIsDropped() {
        try (Lease held = holdElsewhere(account)) {
            assertThat(held.isHeld()).isTrue();
            accounts.accrueInterest("t1", account, 3);
            assertThat(accounts.balance(account)).isZero();
            assertThat(jdbc.queryForObject(
                            "SELECT COUNT(*) FROM leasehold_retry WHERE lock_key = ?",
                            Integer.class,
                            "acct:t1:" + account))
                    .isEqualTo(1);
            await().during(Duration.ofMillis(700))
                    .atMost(Duration.ofSeconds(5))
                    .until(() -> accounts.balance(account) == 0);
        }
        await().atMost(Duration.ofSeconds(20)).until(() -> accounts.balance(account) == 3);
        assertThat(accounts.retried()).contains(account);
        await().atMost(Duration.ofSeconds(5))
                .until(() -> jdbc.queryForObject(
                                "SELECT COUNT(*) FROM leasehold_retry WHERE lock_key = ?",
                                Integer.class,
                                "acct:t1:" + account)
                        == 0);
    }

    // ------------------------------------------------------------------ @Idempotent

    @Test
    void idempotencyKeyHeaderGivesReplay409And422() throws Exception {
        String path = "/accounts/" + account + "/payments";
        mvc.perform(post(path).contentType(MediaType.APPLICATION_JSON).content("{\"amount\":35}"))
                .andExpect(status().isBadRequest())
                .andExpect(jsonPath("$.type").value("https://leasehold.dev/problems/idempotency-key-missing"));

        String key = UUID.randomUUID().toString();
        MvcResult first = mvc.perform(post(path)
                        .header("Idempotency-Key", key)
                        .contentType(MediaType.APPLICATION_JSON)
                        .content("{\"amount\":35,\"note\":\"lunch\"}"))
                .andExpect(status().isCreated())
                .andExpect(header().doesNotExist("Idempotent-Replayed"))
                .andReturn();
        MvcResult replay = mvc.perform(post(path)
                        .header("Idempotency-Key", key)
                        .contentType(MediaType.APPLICATION_JSON)
                        .content("{\"note\":\"lunch\",\"amount\":35.0}"))
                .andExpect(status().isCreated())
                .andExpect(header().string("Idempotent-Replayed", "true"))
                .andReturn();
        assertThat(replay.getResponse().getContentAsString())
                .isEqualTo(first.getResponse().getContentAsString());
        assertThat(accounts.balance(account)).as("paid once").isEqualTo(35);

        mvc.perform(post(path)
                        .header("Idempotency-Key", key)
                        .contentType(MediaType.APPLICATION_JSON)
                        .content("{\"amount\":36,\"note\":\"lunch\"}"))
                .andExpect(status().isUnprocessableContent())
                .andExpect(jsonPath("$.type").value("https://leasehold.dev/problems/idempotency-key-reused"));
        assertThat(accounts.balance(account)).isEqualTo(35);
    }

    @Test
    void duplicateWhileTheFirstRunsGets409AndTheFirstCompletes() throws Exception {
        String path = "/accounts/" + account + "/payments";
        String key = UUID.randomUUID().toString();
        CountDownLatch gate = new CountDownLatch(1);
        payments.gate(gate);
        int before = payments.executions();
        ExecutorService pool = Executors.newSingleThreadExecutor();
        try {
            Future<MvcResult> first = pool.submit(() -> mvc.perform(post(path)
                            .header("Idempotency-Key", key)
                            .contentType(MediaType.APPLICATION_JSON)
                            .content("{\"amount\":10}"))
                    .andReturn());
            await().atMost(Duration.ofSeconds(10)).until(() -> payments.executions() == before + 1);
            mvc.perform(post(path)
                            .header("Idempotency-Key", key)
                            .contentType(MediaType.APPLICATION_JSON)
                            .content("{\"amount\":10}"))
                    .andExpect(status().isConflict())
                    .andExpect(jsonPath("$.type").value("https://leasehold.dev/problems/request-in-progress"));
            gate.countDown();
            assertThat(first.get(30, TimeUnit.SECONDS).getResponse().getStatus())
                    .isEqualTo(201);
        } finally {
            gate.countDown();
            pool.shutdownNow();
        }
        assertThat(payments.executions()).isEqualTo(before + 1);
        assertThat(accounts.balance(account)).isEqualTo(10);
        assertThat(meters.find(LeaseholdMetricNames.IDEMPOTENCY_REQUESTS)
                        .tag("outcome", "in_progress")
                        .counter())
                .isNotNull();
    }

    // ------------------------------------------------------------------ operations

    @Test
    void actuatorListsInspectsAndForceReleasesWithTheRole(CapturedOutput output) throws Exception {
        Lease held = holdElsewhere(account);
        String key = "acct:t1:" + account;
        mvc.perform(get("/actuator/leasehold/acct").param("key", key))
                .andExpect(status().isOk())
                .andExpect(jsonPath("$.fence").value(held.fence()));
        mvc.perform(get("/actuator/leasehold/acct"))
                .andExpect(status().isOk())
                .andExpect(jsonPath("$.leases[?(@.key == '" + key + "')]").exists());
        mvc.perform(get("/actuator/leasehold"))
                .andExpect(status().isOk())
                .andExpect(jsonPath("$.heldHere[?(@.key == '" + key + "')]").exists());

        String body = "{\"key\":\"" + key + "\",\"reason\":\"ticket OPS-7\"}";
        mvc.perform(post("/actuator/leasehold")
                        .contentType(MediaType.APPLICATION_JSON)
                        .content(body))
                .andExpect(status().isForbidden());
        assertThat(held.isHeld()).isTrue();
        mvc.perform(post("/actuator/leasehold")
                        .header("X-Test-Role", "LEASEHOLD_ADMIN")
                        .contentType(MediaType.APPLICATION_JSON)
                        .content(body))
                .andExpect(status().isOk())
                .andExpect(jsonPath("$.removed").value(true));
        assertThat(held.isHeld()).isFalse();
        assertThat(output)
                .contains(
                        "event=force-release by=\"operator\" key=\"" + key + "\" reason=\"ticket OPS-7\" removed=true");
        assertThat(output).contains("event=lease.acquired key=\"" + key + "\"");
        held.close();
    }

    @Test
    void bypassModeRunsWithoutTheLockAndIsCounted() throws Exception {
        String body = "{\"mode\":\"bypass\",\"reason\":\"redis incident\"}";
        mvc.perform(post("/actuator/leaseholdmode")
                        .contentType(MediaType.APPLICATION_JSON)
                        .content(body))
                .andExpect(status().isForbidden());
        try (Lease held = holdElsewhere(account)) {
            assertThat(held.isHeld()).isTrue();
            mvc.perform(post("/actuator/leaseholdmode")
                            .header("X-Test-Role", "LEASEHOLD_ADMIN")
                            .contentType(MediaType.APPLICATION_JSON)
                            .content(body))
                    .andExpect(status().isOk());
            assertThat(mode.bypassed()).isTrue();
            assertThat(accounts.addNow("t1", account, 4))
                    .as("ran although the key is held")
                    .isEqualTo(4);
            assertThat(meters.find(LeaseholdMetricNames.LOCK_BYPASSED).counter())
                    .isNotNull();
        } finally {
            mode.set(dev.leasehold.spring.LeaseholdProperties.Mode.ENFORCE, "test", "restore");
        }
        try (Lease held = holdElsewhere(account)) {
            assertThat(held.isHeld()).isTrue();
            mvc.perform(post("/accounts/" + account + "/deposits")
                            .contentType(MediaType.APPLICATION_JSON)
                            .content("{\"amount\":5}"))
                    .andExpect(status().isConflict());
        }
    }
}
