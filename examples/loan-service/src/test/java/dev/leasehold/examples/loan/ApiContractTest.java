package dev.leasehold.examples.loan;

import static org.assertj.core.api.Assertions.assertThat;

import java.math.BigDecimal;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import tools.jackson.databind.JsonNode;

/** The API's smaller promises: bad input named as such, never a 500, and a description that says it all. */
class ApiContractTest extends H2ServiceTest {

    @Autowired
    ConcurrencyProbe probe;

    @Test
    void aBatchSettlementWithA64CharacterTradeNumberSettlesAndReplays() {
        String a = open("1000.00", 6, today);
        String b = open("2000.00", 6, today);
        String trade = "T".repeat(64);
        Map<String, Object> body = Map.of("borrowNos", List.of(a, b), "channel", "COUNTER", "outTradeNo", trade);
        Api.Answer first = api.post("/customers/C1/batch-settlement", body);
        assertThat(first.status()).as(first.text()).isEqualTo(200);
        Api.Answer retry = api.post("/customers/C1/batch-settlement", body);
        assertThat(retry.status()).isEqualTo(200);
        assertThat(retry.header("Repayment-Duplicate")).isEqualTo("true");
        assertThat(retry.body()).isEqualTo(first.body());
    }

    @Test
    void aBodyNamingAFieldTwiceIsRefusedAndBooksNothing() {
        String note = open("12000.00", 12, today);
        Api.Answer answer = api.post(
                "/notes/" + note + "/repayments",
                "{\"channel\":\"APP\",\"outTradeNo\":\"T-1\",\"amount\":5,\"amount\":4000}");
        assertThat(answer.status()).isEqualTo(400);
        assertThat(answer.body().get("detail").asString()).contains("duplicate field \"amount\"");
        assertThat(api.get("/notes/" + note + "/repayments").body()).isEmpty();
    }

    /**
     * Wrong JSON types are refused, never coerced: a number for an enum (its position), a string for
     * a number, a number for a string, a fraction for a whole number, a field the request does not
     * have. Each is a 400 naming the field, saying the body is valid JSON of the wrong shape, and
     * nothing is booked.
     */
    @Test
    void wrongJsonTypesAndUnknownFieldsAreRefusedNamingTheFieldAndBookNothing() {
        String note = open("12000.00", 12, today);
        Map<String, String> repayments = new java.util.LinkedHashMap<>();
        repayments.put("{\"channel\":1,\"outTradeNo\":\"T-1\",\"amount\":5}", "channel");
        repayments.put("{\"channel\":\"APP\",\"outTradeNo\":\"T-2\",\"amount\":\"5.00\"}", "amount");
        repayments.put("{\"channel\":\"APP\",\"outTradeNo\":12345,\"amount\":5}", "outTradeNo");
        repayments.put("{\"channel\":\"APP\",\"outTradeNo\":true,\"amount\":5}", "outTradeNo");
        repayments.put("{\"channel\":\"APP\",\"outTradeNo\":\"T-3\",\"amount\":5,\"memo\":\"x\"}", "memo");
        repayments.put("{\"channel\":\"app\",\"outTradeNo\":\"T-4\",\"amount\":5}", "channel");
        for (Map.Entry<String, String> bad : repayments.entrySet()) {
            Api.Answer answer = api.post("/notes/" + note + "/repayments", bad.getKey());
            assertThat(answer.status()).as(bad.getKey()).isEqualTo(400);
            assertThat(answer.header("Content-Type")).as(bad.getKey()).startsWith("application/problem+json");
            String detail = answer.body().get("detail").asString();
            assertThat(detail)
                    .as(bad.getKey())
                    .contains("'" + bad.getValue() + "'")
                    .doesNotContain("not valid JSON");
            assertThat(answer.body().get("fields").toString()).as(bad.getKey()).contains(bad.getValue());
        }
        assertThat(api.get("/notes/" + note + "/repayments").body()).isEmpty();
        int term = api.get("/notes/" + note).body().at("/note/termMonths").asInt();
        for (String months : List.of("1.5", "\"2\"", "2.0", "true")) {
            String body = "{\"extraMonths\":" + months + "}";
            Api.Answer answer = api.operator(() -> api.postKeyed("/notes/" + note + "/extension", body, Api.newKey()));
            assertThat(answer.status()).as(body).isEqualTo(400);
            assertThat(answer.body().get("detail").asString())
                    .as(body)
                    .contains("'extraMonths'")
                    .doesNotContain("not valid JSON");
        }
        assertThat(api.get("/notes/" + note).body().at("/note/termMonths").asInt())
                .as("no extension booked")
                .isEqualTo(term);
        Api.Answer waiver = api.operator(() -> api.postKeyed(
                "/notes/" + note + "/interest-waivers",
                "{\"amount\":\"10.00\",\"reason\":\"goodwill\"}",
                Api.newKey()));
        assertThat(waiver.status()).isEqualTo(400);
        assertThat(waiver.body().get("detail").asString()).contains("'amount'");
    }

    /** Valid JSON of the wrong shape is never called "not valid JSON"; broken JSON is. */
    @Test
    void theProblemSaysWhetherTheBodyIsBrokenJsonOrValidJsonOfTheWrongShape() {
        String note = open("12000.00", 12, today);
        for (String shape : List.of("[]", "\"repay\"", "42", "{\"channel\":\"APP\",\"channel\":\"APP\"}")) {
            Api.Answer answer = api.post("/notes/" + note + "/repayments", shape);
            assertThat(answer.status()).as(shape).isEqualTo(400);
            assertThat(answer.body().get("detail").asString()).as(shape).doesNotContain("not valid JSON");
        }
        for (String broken : List.of(
                "{\"channel\":\"APP\",",
                "{channel: APP}",
                "{\"channel\":\"APP\",\"outTradeNo\":\"T-9\",\"amount\":5} x",
                "{\"channel\":\"APP\",\"outTradeNo\":\"T-9\",\"amount\":5} {}")) {
            Api.Answer answer = api.post("/notes/" + note + "/repayments", broken);
            assertThat(answer.status()).as(broken).isEqualTo(400);
            assertThat(answer.body().get("detail").asString()).as(broken).contains("not valid JSON");
        }
        assertThat(api.get("/notes/" + note + "/repayments").body()).isEmpty();
    }

    @Test
    void problemDetailsNameNoJavaType() {
        String note = open("12000.00", 12, today);
        List<String> bodies = List.of(
                "{\"channel\":\"APP\",\"outTradeNo\":\"T-1\",\"amount\":\"lots\"}",
                "{\"channel\":\"PIGEON\",\"outTradeNo\":\"T-1\",\"amount\":5}",
                "{\"channel\":\"APP\",\"outTradeNo\":[1],\"amount\":5}",
                "{\"channel\":\"APP\",",
                "");
        for (String body : bodies) {
            Api.Answer answer = api.post("/notes/" + note + "/repayments", body);
            assertThat(answer.status()).as(body).isEqualTo(400);
            assertThat(answer.text())
                    .as(body)
                    .doesNotContain("java.", "BigDecimal", "Domain$", "dev.leasehold", "Exception", "tools.jackson");
        }
        Api.Answer date = api.operator(() -> api.post("/overdue-runs?asOf=yesterday", Map.of()));
        assertThat(date.status()).isEqualTo(400);
        assertThat(date.text()).doesNotContain("java.", "LocalDate", "Exception");
    }

    @Test
    void theOpenApiDescriptionListsErrorAnswersTheProblemSchemaAndTheHeaders() {
        JsonNode spec = api.getRaw("/v3/api-docs").body();
        JsonNode repay = spec.at("/paths/~1api~1tenants~1{tenant}~1notes~1{borrowNo}~1repayments/post/responses");
        for (String status : List.of("200", "400", "401", "403", "404", "409", "422", "503")) {
            assertThat(repay.has(status)).as("repayments answer " + status).isTrue();
        }
        assertThat(repay.at("/422/content/application~1problem+json/schema/$ref")
                        .asString())
                .isEqualTo("#/components/schemas/Problem");
        assertThat(repay.at("/200/headers/Repayment-Duplicate").isMissingNode()).isFalse();
        assertThat(repay.at("/409/headers/Retry-After").isMissingNode()).isFalse();
        assertThat(spec.at("/components/schemas/Problem/properties/detail").isMissingNode())
                .isFalse();
        JsonNode waiver = spec.at("/paths/~1api~1tenants~1{tenant}~1notes~1{borrowNo}~1interest-waivers/post");
        assertThat(waiver.at("/responses/200/headers/Idempotent-Replayed").isMissingNode())
                .isFalse();
        assertThat(waiver.get("parameters").toString()).contains("Idempotency-Key");
        assertThat(spec.at("/components/securitySchemes/basic/scheme").asString())
                .isEqualTo("basic");
    }

    @Test
    void theOverdueRunReportsAFailingNoteAndGoesOnWithTheOthers() {
        java.time.LocalDate start = today.minusMonths(2).minusDays(1);
        String broken = open("12000.00", 12, start);
        String fine = open("12000.00", 12, start);
        // A stray record makes the broken note's next interest booking collide with its unique key.
        repository.insertCharge(tenant, broken, "INTEREST", "INTEREST:4", new BigDecimal("1.00"), "stray");
        String[] both = {broken, fine};
        for (String n : both) {
            jdbc.update(
                    "UPDATE repayment_schedule SET interest_earned = FALSE, interest_due = 0 WHERE tenant_id = ?"
                            + " AND borrow_no = ? AND period = 4",
                    tenant,
                    n);
        }
        TestClock.advanceDays(31);
        try {
            Api.Answer run = api.overdueRun(calendar.today());
            assertThat(run.status()).isEqualTo(200);
            assertThat(run.body().get("failures")).hasSize(1);
            assertThat(run.body().at("/failures/0/borrowNo").asString()).isEqualTo(broken);
            assertThat(run.body().at("/failures/0/problem").asString()).doesNotContain("Exception");
            assertThat(api.get("/notes/" + fine)
                            .body()
                            .at("/note/penaltyOutstanding")
                            .decimalValue())
                    .as("the other note was still processed")
                    .isPositive();
        } finally {
            TestClock.advanceDays(-31);
        }
    }

    @Test
    void aWrittenOffNoteOwesNothingAndTakesNoMoreRepayments() {
        String note = open("12000.00", 12, today.minusMonths(3));
        Api.Answer off = api.operator(
                () -> api.postKeyed("/notes/" + note + "/write-off", Map.of("reason", "uncollectable"), Api.newKey()));
        assertThat(off.status()).isEqualTo(200);
        assertThat(off.body().at("/note/status").asString()).isEqualTo("WRITTEN_OFF");
        assertThat(off.body().get("outstanding").decimalValue()).isEqualByComparingTo("0");
        JsonNode conservation = api.get("/notes/" + note + "/conservation").body();
        assertThat(conservation.get("holds").asBoolean()).isTrue();
        assertThat(conservation.get("charges").decimalValue())
                .as("interest earned, minus the written-off principal and interest")
                .isEqualByComparingTo("-12000.00");
        assertThat(api.repay(note, "T-1", "5.00").status()).isEqualTo(409);
    }

    /** S2.11 as the seed says: 50 threads, one note, 500 ms inside the critical section. */
    @Test
    void fiftyThreadsWithHalfASecondInsideOneAtATimeAndTheBalanceIsTheSumOfTheAccepted() throws Exception {
        String note = open("100000.00", 12, today);
        BigDecimal before = api.get("/notes/" + note).body().get("outstanding").decimalValue();
        probe.reset();
        probe.delay(Duration.ofMillis(500));
        int threads = 50;
        CyclicBarrier start = new CyclicBarrier(threads);
        ExecutorService pool = Executors.newFixedThreadPool(threads);
        List<Future<Api.Answer>> answers = new ArrayList<>();
        List<String> amounts = new ArrayList<>();
        try {
            for (int i = 0; i < threads; i++) {
                String amount = (1 + i % 9) + ".00";
                amounts.add(amount);
                String trade = "L-" + i + "-" + UUID.randomUUID().toString().substring(0, 6);
                answers.add(pool.submit(() -> {
                    start.await();
                    return api.repay(note, trade, amount);
                }));
            }
            BigDecimal accepted = BigDecimal.ZERO;
            int ok = 0;
            for (int i = 0; i < threads; i++) {
                Api.Answer a = answers.get(i).get(120, TimeUnit.SECONDS);
                assertThat(a.status()).as(a.text()).isIn(200, 409);
                if (a.status() == 200) {
                    ok++;
                    accepted = accepted.add(new BigDecimal(amounts.get(i)));
                }
            }
            assertThat(probe.maxInside()).as("one inside at a time").isEqualTo(1);
            assertThat(ok).as("some got in within their 3 s wait").isPositive();
            BigDecimal after =
                    api.get("/notes/" + note).body().get("outstanding").decimalValue();
            assertThat(before.subtract(after))
                    .as("balance moved by the sum of accepted repayments")
                    .isEqualByComparingTo(accepted);
            assertThat(api.get("/notes/" + note + "/repayments").body()).hasSize(ok);
        } finally {
            probe.delay(Duration.ZERO);
            pool.shutdownNow();
        }
    }

    @Test
    void repaymentsToNotesThatDoNotExistLeaveNoLockState() {
        long leases = jdbc.queryForObject("SELECT COUNT(*) FROM leasehold_lease", Long.class);
        long fences = jdbc.queryForObject("SELECT COUNT(*) FROM leasehold_fence", Long.class);
        for (int i = 0; i < 25; i++) {
            assertThat(api.repay("NOPE" + UUID.randomUUID().toString().substring(0, 8), "T-" + i, "5.00")
                            .status())
                    .isEqualTo(404);
            Api stranger = new Api(port, "x" + UUID.randomUUID().toString().substring(0, 8));
            assertThat(stranger.repay("B1", "T-" + i, "5.00").status()).isIn(401, 403);
        }
        assertThat(jdbc.queryForObject("SELECT COUNT(*) FROM leasehold_lease", Long.class))
                .isEqualTo(leases);
        assertThat(jdbc.queryForObject("SELECT COUNT(*) FROM leasehold_fence", Long.class))
                .isEqualTo(fences);
    }
}
