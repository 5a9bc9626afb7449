package dev.leasehold.it.shop;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.leasehold.idempotency.IdempotentExecutor;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.web.server.LocalServerPort;

/**
 * Heartbeats over HTTP with a short stale threshold (0.9 s): two requests keep their transactions
 * open three thresholds long, a transfer holding its marked booking and a payment holding its
 * write, while two clients per key resubmit every 100 ms. Neither is taken over: one effect each.
 */
@SpringBootTest(
        classes = ShopApplication.class,
        webEnvironment = SpringBootTest.WebEnvironment.RANDOM_PORT,
        properties = "leasehold.idempotency.stale-after=900ms")
abstract class AbstractHeartbeatStarvationHttpTest {

    private static final Duration STALE = Duration.ofMillis(900);

    @LocalServerPort
    int port;

    @Autowired
    Ledger ledger;

    @Autowired
    SlowShop.Gate gate;

    @Autowired
    SlowShop.SlowController slow;

    @Autowired
    IdempotentExecutor executor;

    /** The database's name, for the figures. */
    abstract String databaseName();

    private static String body(String account) {
        return "{\"account\":\"" + account + "\",\"amount\":25.00,\"note\":\"slow\"}";
    }

    @Test
    void longTransactionsAndConcurrentResubmitsLeaveExactlyOneEffectEach() throws Exception {
        Http http = new Http(port);
        String transferAccount = "slow-t-" + UUID.randomUUID().toString().substring(0, 8);
        String paymentAccount = "slow-p-" + UUID.randomUUID().toString().substring(0, 8);
        String transferKey = "key-" + UUID.randomUUID();
        String paymentKey = "key-" + UUID.randomUUID();
        Duration hold = STALE.multipliedBy(3);
        ExecutorService requests = Executors.newCachedThreadPool();
        ScheduledExecutorService clients = Executors.newScheduledThreadPool(4);
        Map<String, AtomicInteger> answers = new ConcurrentHashMap<>();
        try {
            Future<Http.Answer> transfer =
                    requests.submit(() -> http.post("/slow-transfers", "alice", transferKey, body(transferAccount)));
            assertThat(gate.transferHolding.await(30, TimeUnit.SECONDS)).isTrue();
            Future<Http.Answer> payment =
                    requests.submit(() -> http.post("/slow-payments", "alice", paymentKey, body(paymentAccount)));
            assertThat(gate.paymentHolding.await(30, TimeUnit.SECONDS)).isTrue();

            // Two clients per key, each resubmitting 100 ms after its previous answer.
            List<Future<?>> resubmits = new ArrayList<>();
            for (int client = 0; client < 2; client++) {
                resubmits.add(clients.scheduleWithFixedDelay(
                        () -> count(
                                answers,
                                "transfer",
                                () -> http.post("/slow-transfers", "alice", transferKey, body(transferAccount))),
                        100,
                        100,
                        TimeUnit.MILLISECONDS));
                resubmits.add(clients.scheduleWithFixedDelay(
                        () -> count(
                                answers,
                                "payment",
                                () -> http.post("/slow-payments", "alice", paymentKey, body(paymentAccount))),
                        100,
                        100,
                        TimeUnit.MILLISECONDS));
            }
            long holdUntil = System.nanoTime() + hold.toNanos();
            await().atMost(hold.plusSeconds(10))
                    .pollInterval(Duration.ofMillis(50))
                    .until(() -> System.nanoTime() >= holdUntil);
            resubmits.forEach(f -> f.cancel(false));
            gate.release.countDown();
            Http.Answer transferred = transfer.get(60, TimeUnit.SECONDS);
            Http.Answer paid = payment.get(60, TimeUnit.SECONDS);
            clients.shutdown();
            assertThat(clients.awaitTermination(60, TimeUnit.SECONDS)).isTrue();

            Http.Answer transferAgain = http.post("/slow-transfers", "alice", transferKey, body(transferAccount));
            Http.Answer paymentAgain = http.post("/slow-payments", "alice", paymentKey, body(paymentAccount));
            System.out.printf(
                    "[starvation-http %s] stale-after %d ms, transactions held %d ms, resubmit answers %s,"
                            + " payment runs %d, payments %d, transfer bookings %d, heartbeat failures %d%n",
                    databaseName(),
                    STALE.toMillis(),
                    hold.toMillis(),
                    answers.entrySet().stream()
                            .sorted(Map.Entry.comparingByKey())
                            .map(e -> e.getKey() + "=" + e.getValue())
                            .collect(Collectors.joining(", ", "{", "}")),
                    slow.paymentRuns(paymentAccount),
                    ledger.payments(paymentAccount),
                    ledger.payments(transferAccount),
                    executor.heartbeatFailures());

            assertThat(transferred.status()).as(transferred.toString()).isEqualTo(200);
            assertThat(paid.status()).as(paid.toString()).isEqualTo(201);
            assertThat(slow.paymentRuns(paymentAccount))
                    .as("the live payment was never taken over")
                    .isEqualTo(1);
            assertThat(ledger.payments(paymentAccount))
                    .as("exactly one payment")
                    .isEqualTo(1);
            assertThat(ledger.payments(transferAccount))
                    .as("exactly one transfer booking")
                    .isEqualTo(1);
            assertThat(answers.keySet())
                    .as("resubmits were answered in progress or replayed, never run again")
                    .allMatch(a -> a.endsWith(" 409") || a.endsWith(" 200") || a.endsWith(" 201"));
            assertThat(paymentAgain.replayed()).isTrue();
            assertThat(paymentAgain.body()).isEqualTo(paid.body());
            assertThat(transferAgain.body()).isEqualTo(transferred.body());
        } finally {
            gate.release.countDown();
            clients.shutdownNow();
            requests.shutdownNow();
        }
    }

    private interface Call {
        Http.Answer post() throws Exception;
    }

    private static void count(Map<String, AtomicInteger> answers, String what, Call call) {
        String outcome;
        try {
            outcome = what + " " + call.post().status();
        } catch (Exception e) {
            outcome = what + " " + e.getClass().getSimpleName();
        }
        answers.computeIfAbsent(outcome, o -> new AtomicInteger()).incrementAndGet();
    }
}
