package dev.leasehold.examples.ledger;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.leasehold.LeaseOptions;
import dev.leasehold.LockKey;
import dev.leasehold.LockOwner;
import dev.leasehold.LockService;
import dev.leasehold.examples.ledger.ChatHttp.Result;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.context.TestConfiguration;
import org.springframework.boot.test.web.server.LocalServerPort;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Primary;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.web.client.RestClient;

/** sendMessage over HTTP, with a model that counts its calls; subclasses pick the databases. */
@SpringBootTest(
        webEnvironment = SpringBootTest.WebEnvironment.RANDOM_PORT,
        properties = "leasehold.idempotency.stale-after=2s")
@org.springframework.context.annotation.Import(AbstractChatTest.Models.class)
abstract class AbstractChatTest {

    /** The embedded model, counted, slowed or broken on demand. */
    static final class ScriptedModel implements Model {
        final RuleBasedModel real = new RuleBasedModel();
        final AtomicInteger calls = new AtomicInteger();
        volatile long delayMillis;
        volatile int failOnCall = -1;
        volatile Model override;

        @Override
        public Reply next(String systemPrompt, List<Turn> conversation) {
            int call = calls.incrementAndGet();
            if (call == failOnCall) {
                throw new IllegalStateException("the model process died");
            }
            try {
                Thread.sleep(delayMillis);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
            return override != null ? override.next(systemPrompt, conversation) : real.next(systemPrompt, conversation);
        }
    }

    @TestConfiguration
    static class Models {
        @Bean
        @Primary
        ScriptedModel scriptedModel() {
            return new ScriptedModel();
        }
    }

    @LocalServerPort
    int port;

    @Autowired
    ScriptedModel model;

    @Autowired
    JdbcTemplate jdbc;

    @Autowired
    LockService locks;

    RestClient alice;
    String session;

    @BeforeEach
    void session() {
        model.delayMillis = 0;
        model.calls.set(0);
        model.failOnCall = -1;
        model.override = null;
        alice = ChatHttp.as(port, "alice-token");
        session = ChatHttp.newSession(alice, "alice-ledger");
    }

    private Result send(RestClient client, String content, String requestId) {
        return ChatHttp.send(client, session, content, requestId);
    }

    private int booked(String clientKey) {
        return ChatHttp.booked(jdbc, clientKey);
    }

    @Test
    void aMessageWithTwoExpensesBooksBoth() {
        String id = "req-" + UUID.randomUUID();
        Result result = send(alice, "打车30，午饭20", id);
        assertThat(result.status()).isEqualTo(200);
        assertThat(result.body()).contains("Booked 2").contains("交通").contains("餐饮");
        assertThat(booked(id)).isEqualTo(2);
        assertThat(model.calls.get())
                .as("list_categories, create_transaction x2, summary: three rounds")
                .isEqualTo(3);
    }

    @Test
    void thirtyTwoConcurrentSubmitsOfOneRequestRunTheModelOnceAndBookOnce() throws Exception {
        model.delayMillis = 50;
        String id = "req-" + UUID.randomUUID();
        int threads = 32;
        CyclicBarrier start = new CyclicBarrier(threads);
        ExecutorService pool = Executors.newFixedThreadPool(threads);
        List<Future<Result>> results = new ArrayList<>();
        try {
            for (int i = 0; i < threads; i++) {
                results.add(pool.submit(() -> {
                    start.await();
                    return send(alice, "中午吃粉花了35", id);
                }));
            }
            List<String> replies = new ArrayList<>();
            for (Future<Result> f : results) {
                Result r = f.get(60, TimeUnit.SECONDS);
                assertThat(r.status()).as(r.body()).isIn(200, 409);
                if (r.status() == 200) {
                    replies.add(r.body());
                } else {
                    assertThat(r.body()).contains("do not resubmit");
                }
            }
            assertThat(replies).isNotEmpty().allMatch(body -> body.equals(replies.get(0)));
        } finally {
            pool.shutdownNow();
        }
        assertThat(model.calls.get()).as("one agent run of three rounds").isEqualTo(3);
        assertThat(booked(id)).isEqualTo(1);
        Result later = send(alice, "中午吃粉花了35", id);
        assertThat(later.replayed()).isTrue();
        assertThat(model.calls.get()).isEqualTo(3);
    }

    @Test
    void differentRequestsOnOneSessionRunOneAtATimeTheRestGet409() throws Exception {
        model.delayMillis = 300;
        int threads = 6;
        CyclicBarrier start = new CyclicBarrier(threads);
        ExecutorService pool = Executors.newFixedThreadPool(threads);
        List<Future<Result>> results = new ArrayList<>();
        try {
            for (int i = 0; i < threads; i++) {
                String id = "req-" + UUID.randomUUID();
                results.add(pool.submit(() -> {
                    start.await();
                    return send(alice, "lunch 10", id);
                }));
            }
            int ok = 0;
            for (Future<Result> f : results) {
                Result r = f.get(60, TimeUnit.SECONDS);
                if (r.status() == 200) {
                    ok++;
                } else {
                    assertThat(r.status()).isEqualTo(409);
                    assertThat(r.body()).contains("session still has a message in progress");
                }
            }
            assertThat(ok).isGreaterThanOrEqualTo(1);
            assertThat(model.calls.get())
                    .as("only the admitted requests ran the model")
                    .isEqualTo(3 * ok);
        } finally {
            pool.shutdownNow();
        }
        assertThat(locks.inspect(LockKey.of("session", session)))
                .as("session lease released")
                .isEmpty();
    }

    @Test
    void aModelThatDiesBeforeTheReplyIsAskedAgainOnlyForTheUnansweredRoundAndNothingIsBookedTwice() {
        model.failOnCall = 3; // rounds 1 and 2 run, the tool books, then the model dies before the reply
        String id = "req-" + UUID.randomUUID();
        Result crashed = send(alice, "taxi 30", id);
        assertThat(crashed.status()).isEqualTo(500);
        assertThat(booked(id)).isEqualTo(1);

        model.failOnCall = -1;
        int callsBefore = model.calls.get();
        Result recovered = send(alice, "taxi 30", id);
        assertThat(recovered.status()).isEqualTo(200);
        assertThat(recovered.body()).contains("Booked 1").contains("交通");
        assertThat(model.calls.get())
                .as("rounds 1 and 2 were persisted: only round 3 is asked")
                .isEqualTo(callsBefore + 1);
        assertThat(booked(id)).as("no second transaction").isEqualTo(1);
    }

    @Test
    void identicalItemsInOneMessageAreTwoBookings() {
        String id = "req-" + UUID.randomUUID();
        Result result = send(alice, "coffee 5, coffee 5", id);
        assertThat(result.status()).as(result.body()).isEqualTo(200);
        assertThat(result.body()).contains("Booked 2");
        assertThat(booked(id)).isEqualTo(2);
    }

    @Test
    void aRequestTakenOverWhileTheModelRunsStopsRightAfterTheCall() {
        String id = "req-" + UUID.randomUUID();
        model.override = (system, conversation) -> {
            // Another execution claims the request while this one waits for the model.
            jdbc.update("UPDATE leasehold_request SET lease_token = 'another-execution' WHERE client_key = ?", id);
            return model.real.next(system, conversation);
        };
        Result result = send(alice, "lunch 5", id);
        assertThat(result.status()).as(result.body()).isEqualTo(409);
        assertThat(result.body()).contains("taken over");
        assertThat(model.calls.get())
                .as("ownership is checked in the database after the call: no second round")
                .isEqualTo(1);
        assertThat(booked(id)).isZero();
    }

    @Test
    void aStaleRequestIsTakenOverAndTheFormerHoldersLateBookingIsRejected() throws Exception {
        // The first execution stalls inside the model past the stale threshold (2 s) while holding
        // nothing renewable of the request: its heartbeat stops because the test pauses it.
        String id = "req-" + UUID.randomUUID();
        AtomicReference<Result> first = new AtomicReference<>();
        java.util.concurrent.CountDownLatch inModel = new java.util.concurrent.CountDownLatch(1);
        java.util.concurrent.CountDownLatch resume = new java.util.concurrent.CountDownLatch(1);
        model.override = (system, conversation) -> {
            if (conversation.size() == 1 && inModel.getCount() == 1) {
                inModel.countDown();
                age(id);
                locks.forceRelease(LockKey.of("session", session), "test: the first holder's session lease expired");
                try {
                    resume.await(30, TimeUnit.SECONDS);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
            }
            return model.real.next(system, conversation);
        };
        ExecutorService pool = Executors.newSingleThreadExecutor();
        try {
            pool.submit(() -> first.set(send(alice, "lunch 25", id)));
            assertThat(inModel.await(30, TimeUnit.SECONDS)).isTrue();
            // The paused holder's heartbeat may refresh the record between ageing and resubmitting;
            // a refused resubmit changes nothing, so age and resubmit until the take-over happens.
            AtomicReference<Result> takeover = new AtomicReference<>();
            await().atMost(Duration.ofSeconds(20)).until(() -> {
                age(id);
                takeover.set(send(alice, "lunch 25", id));
                return takeover.get().status() == 200;
            });
            resume.countDown();
            await().atMost(Duration.ofSeconds(30)).until(() -> first.get() != null);
        } finally {
            pool.shutdownNow();
        }
        assertThat(first.get().status())
                .as("the former holder must stop: " + first.get().body())
                .isIn(409, 500);
        assertThat(booked(id)).as("one booking, by the new owner").isEqualTo(1);
    }

    /** Makes the request's heartbeat a minute old, as if its holder had been paused that long. */
    private void age(String clientKey) {
        jdbc.update(
                "UPDATE leasehold_request SET updated_at_ms = updated_at_ms - 60000 WHERE client_key = ?", clientKey);
    }

    @Test
    void invalidAmountsAreRefusedOnTheToolPathToo() {
        model.override = (system, conversation) -> {
            Model.Turn last = conversation.get(conversation.size() - 1);
            if (last.role().equals("user")) {
                return new Model.Reply(
                        null,
                        List.of(
                                new Model.ToolCall(
                                        "call-tx-1",
                                        "create_transaction",
                                        "{\"amount\":-5,\"type\":\"expense\",\"category\":\"餐饮\",\"note\":\"x\",\"date\":\"2026-11-29\"}")));
            }
            return model.real.next(system, conversation);
        };
        String id = "req-" + UUID.randomUUID();
        Result result = send(alice, "lunch -5", id);
        assertThat(result.status()).isEqualTo(200);
        assertThat(result.body()).contains("not booked").contains("greater than 0");
        assertThat(booked(id)).isZero();
    }

    /**
     * The embedded model passes on the amount exactly as the user typed it, so the booking check
     * refuses what it cannot book instead of the parser cutting it down to something it can.
     */
    @Test
    void theEmbeddedModelNeverBooksAnAmountTheUserDidNotType() {
        for (String[] typed : new String[][] {
            {"taxi 30.123", "amount must have at most 2 decimals, was \\\"30.123\\\""},
            {
                "taxi 1e400",
                "amount must be a number greater than 0 and at most 100000000 with at most 2 decimals, was too large"
            },
            {"taxi 1.2.3", "amount must be a number greater than 0 and at most 100000000 with at most 2 decimals"}
        }) {
            String id = "req-" + UUID.randomUUID();
            Result result = send(alice, typed[0], id);
            assertThat(result.status()).as(typed[0]).isEqualTo(200);
            assertThat(result.body())
                    .as(typed[0])
                    .contains("Booked 0")
                    .contains("not booked: ")
                    .contains(typed[1]);
            assertThat(booked(id)).as(typed[0]).isZero();
        }
        String id = "req-" + UUID.randomUUID();
        Result fine = send(alice, "taxi 30.12", id);
        assertThat(fine.body()).contains("Booked 1").contains("30.12").contains("(taxi)");
        assertThat(booked(id)).isEqualTo(1);
    }

    @Test
    void deletedSessionsAndStrangersAreRefused() {
        RestClient nobody =
                RestClient.builder().baseUrl("http://127.0.0.1:" + port).build();
        Integer unauthenticated = nobody.get().uri("/api/ledgers").exchange((q, r) -> r.getStatusCode()
                .value());
        assertThat(unauthenticated).isEqualTo(401);
        RestClient bob = ChatHttp.as(port, "bob-token");
        assertThat(send(bob, "lunch 5", "req-" + UUID.randomUUID()).status())
                .as("another user's session")
                .isEqualTo(404);
        alice.delete().uri("/api/sessions/{s}", session).retrieve().toBodilessEntity();
        Result refused = send(alice, "lunch 5", "req-" + UUID.randomUUID());
        assertThat(refused.status()).isEqualTo(410);
        assertThat(send(alice, "lunch 5", "bad id!").status()).isEqualTo(400);
    }

    @Test
    void aBusySessionLeaseIs409NotAWait() {
        try (var held = locks.tryAcquire(
                        LockKey.of("session", session), LeaseOptions.defaults(), LockOwner.create("other"))
                .orElseThrow()) {
            assertThat(held.isHeld()).isTrue();
            Result r = send(alice, "lunch 5", "req-" + UUID.randomUUID());
            assertThat(r.status()).isEqualTo(409);
            assertThat(r.body()).contains("session still has a message in progress");
        }
    }
}
