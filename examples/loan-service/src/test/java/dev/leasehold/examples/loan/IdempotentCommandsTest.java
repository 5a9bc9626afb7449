package dev.leasehold.examples.loan;

import static org.assertj.core.api.Assertions.assertThat;

import java.math.BigDecimal;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import tools.jackson.databind.JsonNode;

/**
 * Every money-moving command applied once: repayments and settlements by their trade number,
 * operator commands by their Idempotency-Key; the same request again replays its answer, the key or
 * trade number with other parameters is refused, never "accepted".
 */
class IdempotentCommandsTest extends H2ServiceTest {

    private Api.Answer waive(String note, String key, String amount) {
        return api.operator(() -> api.postKeyed(
                "/notes/" + note + "/interest-waivers",
                Map.of("amount", new BigDecimal(amount), "reason", "goodwill"),
                key));
    }

    private JsonNode note(String note) {
        return api.get("/notes/" + note).body().get("note");
    }

    @Test
    void aRetriedWaiverWaivesOnceAndReplaysItsAnswer() {
        String note = open("12000.00", 12, today); // 120.00 interest earned
        String key = Api.newKey();
        Api.Answer first = waive(note, key, "100.00");
        Api.Answer retry = waive(note, key, "100.00");
        assertThat(first.status()).isEqualTo(200);
        assertThat(retry.status()).isEqualTo(200);
        assertThat(retry.header("Idempotent-Replayed")).isEqualTo("true");
        assertThat(retry.body()).isEqualTo(first.body());
        assertThat(note(note).get("interestOutstanding").decimalValue())
                .as("100.00 waived once, not 200.00")
                .isEqualByComparingTo("20.00");
        assertThat(waive(note, key, "5.00").status())
                .as("the key with another amount")
                .isEqualTo(422);
    }

    @Test
    void aRetriedExtensionExtendsOnce() {
        String note = open("12000.00", 24, today);
        String key = Api.newKey();
        for (int i = 0; i < 2; i++) {
            assertThat(api.operator(() -> api.postKeyed("/notes/" + note + "/extension", Map.of("extraMonths", 6), key))
                            .status())
                    .isEqualTo(200);
        }
        assertThat(note(note).get("termMonths").asInt()).as("24 + 6, not 36").isEqualTo(30);
    }

    @Test
    void operatorCommandsNeedAnIdempotencyKey() {
        String note = open("12000.00", 12, today);
        Api.Answer missing = api.operator(() -> api.post(
                "/notes/" + note + "/interest-waivers",
                Map.of("amount", new BigDecimal("1.00"), "reason", "goodwill")));
        assertThat(missing.status()).isEqualTo(400);
        assertThat(missing.text()).contains("Idempotency-Key");
    }

    @Test
    void aTradeNumberReusedWithAnotherAmountIsRefusedNotAccepted() {
        String note = open("12000.00", 12, today);
        assertThat(api.repay(note, "T-1", "100.00").status()).isEqualTo(200);
        Api.Answer other = api.repay(note, "T-1", "9000.00");
        assertThat(other.status()).isEqualTo(422);
        assertThat(other.body().get("type").asString()).endsWith("/trade-number-reused");
        Api.Answer same = api.repay(note, "T-1", "100.00");
        assertThat(same.status()).isEqualTo(200);
        assertThat(same.header("Repayment-Duplicate")).isEqualTo("true");
        Api.Answer settlement = api.settle(note, "T-1");
        assertThat(settlement.status())
                .as("a settlement under a repayment's trade number")
                .isEqualTo(422);
        assertThat(note(note).get("status").asString()).isEqualTo("PARTIALLY_REPAID");
        assertThat(api.get("/notes/" + note + "/repayments").body()).hasSize(1);
    }

    @Test
    void tenConcurrentAmountsOnOneTradeNumberBookOneAndRefuseTheOthers() throws Exception {
        String note = open("12000.00", 12, today);
        int threads = 10;
        CyclicBarrier start = new CyclicBarrier(threads);
        ExecutorService pool = Executors.newFixedThreadPool(threads);
        List<Future<Api.Answer>> answers = new ArrayList<>();
        try {
            for (int i = 0; i < threads; i++) {
                String amount = (i + 1) + "0.00";
                answers.add(pool.submit(() -> {
                    start.await();
                    return api.repay(note, "T-RACE", amount);
                }));
            }
            int accepted = 0;
            for (Future<Api.Answer> answer : answers) {
                Api.Answer a = answer.get(60, TimeUnit.SECONDS);
                if (a.status() == 200) {
                    accepted++;
                } else {
                    assertThat(a.status()).as(a.text()).isIn(409, 422);
                }
            }
            assertThat(accepted).as("one amount accepted, nine refused").isEqualTo(1);
        } finally {
            pool.shutdownNow();
        }
        assertThat(api.get("/notes/" + note + "/repayments").body()).hasSize(1);
        assertThat(api.get("/notes/" + note + "/conservation")
                        .body()
                        .get("holds")
                        .asBoolean())
                .isTrue();
    }

    @Test
    void aRetriedReversalReplaysItsResultAndTheReversedTradeIsNotAcceptedAgain() {
        String note = open("12000.00", 12, today);
        String flow = api.repay(note, "T-1", "500.00").body().get("flowId").asString();
        String key = Api.newKey();
        String path = "/notes/" + note + "/repayments/" + flow + "/reversal";
        Api.Answer first = api.operator(() -> api.postKeyed(path, Map.of("reason", "bounced"), key));
        Api.Answer retry = api.operator(() -> api.postKeyed(path, Map.of("reason", "bounced"), key));
        assertThat(first.status()).isEqualTo(200);
        assertThat(retry.status()).as("a retry gets the result, not 409").isEqualTo(200);
        assertThat(retry.body()).isEqualTo(first.body());
        assertThat(api.operator(() -> api.postKeyed(path, Map.of("reason", "bounced"), Api.newKey()))
                        .status())
                .as("another reversal of the same repayment")
                .isEqualTo(409);
        Api.Answer again = api.repay(note, "T-1", "500.00");
        assertThat(again.status())
                .as("a reversed trade number is not 'accepted'")
                .isEqualTo(409);
        assertThat(again.body().get("type").asString()).endsWith("/repayment-reversed");
        assertThat(note(note).get("principalOutstanding").decimalValue()).isEqualByComparingTo("12000.00");
    }

    @Test
    void aRetriedSettlementReplaysTheReceipt() {
        String note = open("12000.00", 12, today);
        Api.Answer first = api.settle(note, "S-1");
        Api.Answer retry = api.settle(note, "S-1");
        assertThat(first.status()).isEqualTo(200);
        assertThat(retry.status()).isEqualTo(200);
        assertThat(retry.header("Repayment-Duplicate")).isEqualTo("true");
        assertThat(retry.body().get("flowId")).isEqualTo(first.body().get("flowId"));
    }
}
