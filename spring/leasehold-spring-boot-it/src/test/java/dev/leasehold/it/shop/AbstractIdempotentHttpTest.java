package dev.leasehold.it.shop;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.leasehold.Lease;
import dev.leasehold.LeaseOptions;
import dev.leasehold.LockKey;
import dev.leasehold.LockOwner;
import dev.leasehold.LockService;
import java.math.BigDecimal;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.LocalDate;
import java.util.List;
import java.util.UUID;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.web.server.LocalServerPort;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.security.authentication.UsernamePasswordAuthenticationToken;
import org.springframework.security.core.context.SecurityContextHolder;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;

/**
 * {@code @Idempotent} over real HTTP in the stock Boot 4 shop, on the database of the subclass:
 * exact replay, the caller's scope, key rules, the caller's transaction, checked exceptions,
 * storable responses and Jackson 3 payloads.
 */
@SpringBootTest(
        classes = ShopApplication.class,
        webEnvironment = SpringBootTest.WebEnvironment.RANDOM_PORT,
        properties = {
            "leasehold.retry.poll-interval=200ms",
            "leasehold.retry.initial-delay=300ms",
            "leasehold.idempotency.tenant-header=X-Tenant"
        })
abstract class AbstractIdempotentHttpTest {

    @LocalServerPort
    int port;

    @Autowired
    Ledger ledger;

    @Autowired
    PaymentsController payments;

    @Autowired
    Interest interest;

    @Autowired
    NotificationsController notifications;

    @Autowired
    LockService locks;

    @Autowired
    JdbcTemplate jdbc;

    @Autowired
    JsonMapper json;

    Http http;
    String account;

    @BeforeEach
    void setUp() {
        http = new Http(port);
        account = "acct-" + UUID.randomUUID().toString().substring(0, 8);
    }

    /** The database this test's application uses, for a child JVM to share. */
    abstract ShopDatabases database();

    static String key() {
        return "key-" + UUID.randomUUID();
    }

    String payment(String account, String amount) {
        return "{\"account\":\"" + account + "\",\"amount\":" + amount + ",\"note\":\"n\"}";
    }

    // ------------------------------------------------------------------ replay

    @Test
    void aLocalDateResponseIsStoredAndReplayedAndTheWorkRunsOnce() throws Exception {
        String key = key();
        Http.Answer first = http.post("/payments", "alice", key, payment(account, "35.10"));
        Http.Answer second = http.post("/payments", "alice", key, payment(account, "35.10"));

        assertThat(first.status()).as(first.toString()).isEqualTo(201);
        assertThat(json.readTree(first.body()).get("valueDate").asString()).isEqualTo("2026-03-31");
        assertThat(second.status()).as(second.toString()).isEqualTo(201);
        assertThat(second.replayed()).isTrue();
        assertThat(payments.executions(account)).isEqualTo(1);
        assertThat(ledger.payments(account)).isEqualTo(1);
    }

    @Test
    void replayIsByteIdenticalWithStatusContentTypeAndAllowListedHeaders() throws Exception {
        String key = key();
        String body = payment(account, "12345678901234567.89");
        Http.Answer first = http.post("/payments", "alice", key, body);
        Http.Answer replay = http.post("/payments", "alice", key, body);

        assertThat(first.status()).as(first.toString()).isEqualTo(201);
        assertThat(first.text()).contains("\"amount\":12345678901234567.89");
        assertThat(replay.status()).isEqualTo(201);
        assertThat(replay.replayed()).isTrue();
        assertThat(first.replayed()).isFalse();
        assertThat(replay.body()).as("the stored bytes, not a re-serialisation").isEqualTo(first.body());
        assertThat(replay.header("Content-Type")).isEqualTo(first.header("Content-Type"));
        assertThat(replay.header("Location")).isNotNull().isEqualTo(first.header("Location"));
        assertThat(replay.header("ETag")).isNotNull().isEqualTo(first.header("ETag"));
        assertThat(first.header("X-Trace")).isNotNull();
        assertThat(replay.header("X-Trace")).as("not on the allow-list").isNull();
        assertThat(first.all("Set-Cookie")).anyMatch(c -> c.startsWith("last-payment="));
        assertThat(replay.all("Set-Cookie")).as("cookies are never replayed").isEmpty();
        assertThat(ledger.payments(account)).isEqualTo(1);
    }

    @Test
    void decimalsKeepTheirDigitsInTheResponseAndTheReplay() throws Exception {
        String key = key();
        Http.Answer first = http.post("/payments", "alice", key, payment(account, "35.10"));
        Http.Answer replay = http.post("/payments", "alice", key, payment(account, "35.1"));

        assertThat(first.text()).contains("\"amount\":35.10");
        assertThat(replay.replayed()).as("35.1 and 35.10 are the same payload").isTrue();
        assertThat(replay.text()).contains("\"amount\":35.10").isEqualTo(first.text());
    }

    @Test
    void aBusiness422IsStoredAndReplayedWithoutRunningAgain() throws Exception {
        String frozen = "frozen-" + account;
        String key = key();
        Http.Answer first = http.post("/payments", "alice", key, payment(frozen, "5"));
        Http.Answer replay = http.post("/payments", "alice", key, payment(frozen, "5"));

        assertThat(first.status()).as(first.toString()).isEqualTo(422);
        assertThat(replay.status()).isEqualTo(422);
        assertThat(replay.replayed()).isTrue();
        assertThat(replay.body()).isEqualTo(first.body());
        assertThat(replay.header("Content-Type")).isEqualTo(first.header("Content-Type"));
        assertThat(payments.executions(frozen)).isEqualTo(1);
    }

    @Test
    void aReturned5xxIsNotStoredAndItsWriteIsRolledBackSoTheRetryRunsAgain() throws Exception {
        String flaky = "flaky-" + account;
        String key = key();
        Http.Answer first = http.post("/payments", "alice", key, payment(flaky, "5"));
        Http.Answer retry = http.post("/payments", "alice", key, payment(flaky, "5"));

        assertThat(first.status()).as(first.toString()).isEqualTo(503);
        assertThat(retry.status()).isEqualTo(503);
        assertThat(retry.replayed()).isFalse();
        assertThat(payments.executions(flaky))
                .as("a 5xx is a failure: the retry ran")
                .isEqualTo(2);
        assertThat(ledger.payments(flaky))
                .as("the writes behind a 5xx answer are rolled back")
                .isZero();
    }

    @Test
    void aNoContentAnswerIsStoredAndReplayed() throws Exception {
        String key = key();
        int before = notifications.sent();
        Http.Answer first = http.post("/notifications", "alice", key, payment(account, "1"));
        Http.Answer replay = http.post("/notifications", "alice", key, payment(account, "1"));

        assertThat(first.status()).as(first.toString()).isEqualTo(204);
        assertThat(replay.status()).isEqualTo(204);
        assertThat(replay.replayed()).isTrue();
        assertThat(replay.body()).isEmpty();
        assertThat(notifications.sent() - before).isEqualTo(1);
    }

    // ------------------------------------------------------------------ scope

    @Test
    void twoPrincipalsWithTheSameKeyValueEachGetTheirOwnExecution() throws Exception {
        String key = key();
        Http.Answer alice = http.post("/payments", "alice", key, payment(account, "10"));
        Http.Answer bob = http.post("/payments", "bob", key, payment(account, "10"));

        assertThat(alice.status()).as(alice.toString()).isEqualTo(201);
        assertThat(bob.status()).as(bob.toString()).isEqualTo(201);
        assertThat(bob.replayed()).as("bob never gets alice's receipt").isFalse();
        assertThat(json.readTree(alice.body()).get("bookedBy").asString()).isEqualTo("alice");
        assertThat(json.readTree(bob.body()).get("bookedBy").asString()).isEqualTo("bob");
        assertThat(ledger.payments(account)).isEqualTo(2);

        Http.Answer bobAgain = http.post("/payments", "bob", key, payment(account, "10"));
        assertThat(bobAgain.replayed()).isTrue();
        assertThat(bobAgain.body()).isEqualTo(bob.body());
        assertThat(ledger.payments(account)).isEqualTo(2);
    }

    @Test
    void aGuestWhoseTenantHeaderImitatesAUserNeverGetsThatUsersReceipt() throws Exception {
        String key = key();
        Http.Answer alice = http.post("/wallet/payments", "alice", key, payment(account, "10"), "X-Tenant", "acme");
        Http.Answer guest =
                http.post("/wallet/payments", null, key, payment(account, "10"), "X-Tenant", "acme|user=alice");

        assertThat(alice.status()).as(alice.toString()).isEqualTo(201);
        assertThat(guest.status()).as(guest.toString()).isEqualTo(201);
        assertThat(guest.replayed()).as("the guest never gets alice's receipt").isFalse();
        assertThat(json.readTree(guest.body()).get("bookedBy").asString()).isEqualTo("guest");
        assertThat(ledger.payments(account)).isEqualTo(2);
    }

    @Test
    void aGuestWhoseTenantHeaderImitatesAUserCannotPreemptThatUsersPayment() throws Exception {
        String key = key();
        Http.Answer guest =
                http.post("/wallet/payments", null, key, payment(account, "10"), "X-Tenant", "acme|user=alice");
        Http.Answer alice = http.post("/wallet/payments", "alice", key, payment(account, "10"), "X-Tenant", "acme");

        assertThat(guest.status()).as(guest.toString()).isEqualTo(201);
        assertThat(alice.status()).as(alice.toString()).isEqualTo(201);
        assertThat(alice.replayed())
                .as("alice's payment runs, it is not handed the guest's receipt")
                .isFalse();
        assertThat(json.readTree(alice.body()).get("bookedBy").asString()).isEqualTo("alice");
        assertThat(ledger.payments(account)).isEqualTo(2);
    }

    @Test
    void aGuestAndASignedInUserNeverShareAScope() throws Exception {
        String key = key();
        Http.Answer guest = http.post("/wallet/payments", null, key, payment(account, "10"));
        Http.Answer alice = http.post("/wallet/payments", "alice", key, payment(account, "10"));
        Http.Answer guestAgain = http.post("/wallet/payments", null, key, payment(account, "10"));

        assertThat(alice.replayed()).as(alice.toString()).isFalse();
        assertThat(json.readTree(alice.body()).get("bookedBy").asString()).isEqualTo("alice");
        assertThat(guestAgain.replayed()).isTrue();
        assertThat(guestAgain.body()).isEqualTo(guest.body());
        assertThat(ledger.payments(account)).isEqualTo(2);
    }

    @Test
    void aTabOrANonAsciiByteInTheTenantHeaderIs400NamingTheHeader() throws Exception {
        List<byte[]> values =
                List.of("acme\tcorp".getBytes(StandardCharsets.US_ASCII), new byte[] {'a', 'c', 'm', (byte) 0xE9});
        for (byte[] value : values) {
            String answer = http.rawPost("/wallet/payments", key(), "X-Tenant", value, payment(account, "1"));

            assertThat(answer).as(answer).startsWith("HTTP/1.1 400 ");
            assertThat(answer)
                    .contains("application/problem+json")
                    .contains("https://leasehold.dev/problems/tenant-invalid")
                    .contains("X-Tenant");
        }
        assertThat(ledger.payments(account)).isZero();
    }

    // ------------------------------------------------------------------ the fingerprint

    static String deposit(String account, String amount, String memo) {
        return "{\"memo\":\"" + memo + "\",\"amount\":" + amount + ",\"account\":\"" + account + "\"}";
    }

    @Test
    void aWriteOnlyAmountAndASetterOnlyMemoCountInTheFingerprint() throws Exception {
        String key = key();
        Http.Answer first = http.post("/wallet/deposits", "alice", key, deposit(account, "5.00", "rent"));
        Http.Answer more = http.post("/wallet/deposits", "alice", key, deposit(account, "500.00", "rent"));
        Http.Answer otherMemo = http.post("/wallet/deposits", "alice", key, deposit(account, "5.00", "gift"));
        Http.Answer same = http.post(
                "/wallet/deposits",
                "alice",
                key,
                "{ \"account\": \"" + account + "\", \"amount\": 5.0, \"memo\": \"rent\" }");

        assertThat(first.status()).as(first.toString()).isEqualTo(201);
        assertThat(more.status())
                .as("another amount under the same key: " + more)
                .isEqualTo(422);
        assertThat(otherMemo.status())
                .as("another memo under the same key: " + otherMemo)
                .isEqualTo(422);
        assertThat(same.status()).as(same.toString()).isEqualTo(201);
        assertThat(same.replayed())
                .as("the same document, spaced and ordered otherwise")
                .isTrue();
        assertThat(ledger.payments(account)).isEqualTo(1);
        assertThat(ledger.total(account)).isEqualByComparingTo(new BigDecimal("5.00"));
    }

    // ------------------------------------------------------------------ answer shapes

    /**
     * Posts the same payment to {@code /plain/<shape>} (plain MVC) and twice with one key to {@code
     * /shapes/<shape>}: the first answer must be plain MVC's, the second its replay; one booking.
     */
    Http.Answer sentAsPlainMvcAndReplayed(String shape, String amount) throws Exception {
        String key = key();
        Http.Answer plain = http.post("/plain/" + shape, "alice", null, payment(account, amount));
        Http.Answer first = http.post("/shapes/" + shape, "alice", key, payment(account, amount));
        Http.Answer replay = http.post("/shapes/" + shape, "alice", key, payment(account, amount));

        for (Http.Answer answer : List.of(first, replay)) {
            assertThat(answer.status()).as(answer.toString()).isEqualTo(plain.status());
            assertThat(answer.body()).as(answer.toString()).isEqualTo(plain.body());
            assertThat(answer.header("Content-Type")).isEqualTo(plain.header("Content-Type"));
            assertThat(answer.header("Location")).isEqualTo(plain.header("Location"));
        }
        assertThat(first.replayed()).isFalse();
        assertThat(replay.replayed()).isTrue();
        assertThat(ledger.payments(account)).isEqualTo(1);
        return plain;
    }

    @Test
    void aVoidHandlerWritingItsOwn201IsSentAsPlainMvcSendsItAndReplayedTheSame() throws Exception {
        Http.Answer plain = sentAsPlainMvcAndReplayed("void-created", "3");

        assertThat(plain.status()).isEqualTo(201);
        assertThat(plain.header("Location")).isEqualTo("/accounts/" + account);
        assertThat(plain.text()).isEqualTo("{\"account\":\"" + account + "\",\"booked\":true}");
    }

    @Test
    void aVoidHandlerWritingItsOwn503IsSentAsWrittenUnstoredAndItsWriteRolledBack() throws Exception {
        String key = key();
        Http.Answer plain = http.post("/plain/void-unavailable", "alice", null, payment(account, "8"));
        Http.Answer first = http.post("/shapes/void-unavailable", "alice", key, payment(account, "8"));
        Http.Answer retry = http.post("/shapes/void-unavailable", "alice", key, payment(account, "8"));

        assertThat(plain.status()).isEqualTo(503);
        for (Http.Answer answer : List.of(first, retry)) {
            assertThat(answer.status()).as(answer.toString()).isEqualTo(503);
            assertThat(answer.text()).as(answer.toString()).isEqualTo(plain.text());
            assertThat(answer.header("Content-Type")).isEqualTo(plain.header("Content-Type"));
            assertThat(answer.header("Retry-After")).isEqualTo("7");
            assertThat(answer.replayed()).as("a 5xx is never stored").isFalse();
        }
        assertThat(ledger.payments(account))
                .as("the writes behind a 5xx answer are rolled back")
                .isZero();
    }

    @Test
    void aJsonStringIsSentAsPlainMvcSendsItAndReplayedTheSame() throws Exception {
        Http.Answer plain = sentAsPlainMvcAndReplayed("json-string", "4");

        assertThat(plain.status()).isEqualTo(200);
        assertThat(plain.header("Content-Type")).startsWith("application/json");
        assertThat(plain.text())
                .as("the text itself, not encoded a second time")
                .isEqualTo("{\"account\":\"" + account + "\",\"note\":\"caf\u00e9\"}");
    }

    @Test
    void aBodyLargerThanTheLimitIs413AndNothingRuns() throws Exception {
        String note = "n".repeat(1024 * 1024);
        String body = "{\"account\":\"" + account + "\",\"amount\":1,\"note\":\"" + note + "\"}";
        Http.Answer answer = http.post("/wallet/payments", "alice", key(), body);

        assertThat(answer.status())
                .as("%d %s", answer.status(), answer.header("Content-Type"))
                .isEqualTo(413);
        assertThat(ledger.payments(account)).isZero();
    }

    @Test
    void aStreamBehindAWildcardEntityIsRefusedAndItsWriteRolledBack() throws Exception {
        String key = key();
        Http.Answer first = http.post("/shapes/stream-wildcard", "alice", key, payment(account, "6"));
        Http.Answer retry = http.post("/shapes/stream-wildcard", "alice", key, payment(account, "6"));

        assertThat(first.status()).as(first.toString()).isEqualTo(500);
        assertThat(json.readTree(first.body()).get("type").asString())
                .isEqualTo("https://leasehold.dev/problems/response-not-storable");
        assertThat(first.text()).contains("AnswerShapesController.streamWildcard");
        assertThat(retry.replayed()).as("nothing was stored").isFalse();
        assertThat(ledger.payments(account))
                .as("the write behind a refused answer is rolled back")
                .isZero();
    }

    // ------------------------------------------------------------------ keys and failures

    @Test
    void aKeyLongerThan255CharactersIs400NamingTheRule() throws Exception {
        Http.Answer answer = http.post("/payments", "alice", "k".repeat(256), payment(account, "1"));

        assertThat(answer.status()).as(answer.toString()).isEqualTo(400);
        assertThat(answer.header("Content-Type")).startsWith("application/problem+json");
        JsonNode problem = json.readTree(answer.body());
        assertThat(problem.get("type").asString()).isEqualTo("https://leasehold.dev/problems/idempotency-key-invalid");
        assertThat(problem.get("detail").asString()).contains("at most 255 characters");
        assertThat(payments.executions(account)).isZero();
    }

    @Test
    void aKeyWithAControlCharacterIs400NamingTheRule() throws Exception {
        Http.Answer answer = http.post("/payments", "alice", "abc\tdef", payment(account, "1"));

        assertThat(answer.status()).as(answer.toString()).isEqualTo(400);
        JsonNode problem = json.readTree(answer.body());
        assertThat(problem.get("type").asString()).isEqualTo("https://leasehold.dev/problems/idempotency-key-invalid");
        assertThat(problem.get("detail").asString()).contains("control character");
        assertThat(payments.executions(account)).isZero();
    }

    @Test
    void aDeclaredCheckedExceptionReachesTheApplicationsHandlerUnwrapped() throws Exception {
        Http.Answer answer = http.post("/refunds", "alice", key(), payment(account, "500"));

        assertThat(answer.status()).as(answer.toString()).isEqualTo(422);
        assertThat(json.readTree(answer.body()).get("type").asString())
                .isEqualTo("https://shop.example/problems/refund-rejected");
    }

    @Test
    void aResponseThatCannotBeStoredIsAProblemAndIsNotReplayed() throws Exception {
        String key = key();
        Http.Answer answer = http.post("/unwritable", "alice", key, payment(account, "1"));

        assertThat(answer.status()).as(answer.toString()).isEqualTo(500);
        assertThat(answer.header("Content-Type")).startsWith("application/problem+json");
        assertThat(json.readTree(answer.body()).get("type").asString())
                .isEqualTo("https://leasehold.dev/problems/response-not-storable");
    }

    // ------------------------------------------------------------------ the caller's transaction

    @Test
    void aCallersRollbackLeavesNoReceiptAndTheRetryBooksOnce() throws Exception {
        String key = key();
        Http.Answer failed = http.post("/transfers?fail=true", "alice", key, payment(account, "70"));
        assertThat(failed.status()).as(failed.toString()).isEqualTo(409);
        assertThat(ledger.payments(account)).as("the caller rolled back").isZero();

        Http.Answer retry = http.post("/transfers", "alice", key, payment(account, "70"));
        assertThat(retry.status()).as(retry.toString()).isEqualTo(200);
        assertThat(ledger.payments(account))
                .as("no receipt survived the rollback: the retry booked the money once")
                .isEqualTo(1);
        assertThat(ledger.total(account)).isEqualByComparingTo(new BigDecimal("70"));

        Http.Answer again = http.post("/transfers", "alice", key, payment(account, "70"));
        assertThat(again.body()).isEqualTo(retry.body());
        assertThat(ledger.payments(account)).isEqualTo(1);
    }

    @Test
    void aJvmHaltedRightAfterTheCommitLeavesOneEffectAndTheRetryReplaysIt() throws Exception {
        String key = key();
        String body = "{\"account\":\"" + account + "\",\"amount\":12.50,\"note\":\"crash\"}";
        try (ChildShop child = ChildShop.start(database(), "crash-child", "--shop.halt-after-commit-note=crash")) {
            Http toChild = new Http(child.port);
            org.assertj.core.api.Assertions.assertThatThrownBy(() -> toChild.post("/payments", "alice", key, body))
                    .as("the child halts before it can answer")
                    .isInstanceOf(java.io.IOException.class);
            assertThat(child.process.waitFor(30, java.util.concurrent.TimeUnit.SECONDS))
                    .isTrue();
            assertThat(child.process.exitValue()).isEqualTo(99);
        }
        assertThat(ledger.payments(account)).as("the business write committed").isEqualTo(1);
        long haltedAt = System.nanoTime();

        java.util.List<String> refusals = new java.util.ArrayList<>();
        Http.Answer[] answer = new Http.Answer[1];
        await().atMost(Duration.ofSeconds(20))
                .pollInterval(Duration.ofMillis(200))
                .until(() -> {
                    answer[0] = http.post("/payments", "alice", key, body);
                    if (answer[0].status() == 409) {
                        refusals.add(answer[0].text());
                        return false;
                    }
                    return true;
                });
        System.out.printf(
                "[crash-http %s] halted between commit and answer: retry answered %d %s after %d ms, %d refusals;"
                        + " payments %d%n",
                database().engine(),
                answer[0].status(),
                answer[0].replayed() ? "(replayed)" : "(executed)",
                Duration.ofNanos(System.nanoTime() - haltedAt).toMillis(),
                refusals.size(),
                ledger.payments(account));
        assertThat(ledger.payments(account))
                .as("exactly one effect after the retry")
                .isEqualTo(1);
        assertThat(answer[0].status()).isEqualTo(201);
        assertThat(answer[0].replayed())
                .as("the retry gets the committed result")
                .isTrue();
        assertThat(payments.executions(account)).as("nothing ran in this JVM").isZero();
    }

    // ------------------------------------------------------------------ Jackson 3 payloads

    @Test
    void retryLaterStoresALocalDateArgumentAndRunsItLater() {
        LocalDate day = LocalDate.of(2026, 2, 28);
        Lease held = locks.tryAcquire(
                        LockKey.of("interest", account), LeaseOptions.defaults(), LockOwner.create("elsewhere"))
                .orElseThrow();
        try {
            SecurityContextHolder.getContext()
                    .setAuthentication(
                            UsernamePasswordAuthenticationToken.authenticated("job", null, java.util.List.of()));
            interest.accrue(account, day);
            assertThat(interest.days(account)).as("busy: stored for later").isEmpty();
        } finally {
            SecurityContextHolder.clearContext();
            held.close();
        }
        await().atMost(Duration.ofSeconds(20))
                .until(() -> interest.days(account).contains(day));
        assertThat(interest.days(account)).containsExactly(day);
    }
}
