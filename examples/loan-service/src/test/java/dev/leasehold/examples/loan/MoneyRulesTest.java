package dev.leasehold.examples.loan;

import static org.assertj.core.api.Assertions.assertThat;

import java.math.BigDecimal;
import java.util.Map;
import org.junit.jupiter.api.Test;
import tools.jackson.databind.JsonNode;

/** The README's money rules, checked over HTTP as a lender's operations team would check them. */
class MoneyRulesTest extends H2ServiceTest {

    private static BigDecimal sum(JsonNode lines, String field) {
        BigDecimal total = BigDecimal.ZERO;
        for (JsonNode line : lines) {
            total = total.add(line.get(field).decimalValue());
        }
        return total;
    }

    @Test
    void anExtensionNeverChargesAgainTheInterestAlreadyPaid() {
        String note = open("12000.00", 12, today);
        assertThat(api.repay(note, "T-1", "200.00").status()).isEqualTo(200);
        assertThat(api.extend(note, 1).status()).isEqualTo(200);

        JsonNode view = api.get("/notes/" + note).body();
        BigDecimal scheduleInterest = sum(view.get("schedule"), "interestDue");
        BigDecimal charges = api.get("/notes/" + note + "/conservation")
                .body()
                .get("charges")
                .decimalValue();
        BigDecimal outstanding = view.get("outstanding").decimalValue();
        assertThat(charges)
                .as("interest charged so far never exceeds the interest of the whole new schedule")
                .isLessThanOrEqualTo(scheduleInterest);
        assertThat(outstanding.add(new BigDecimal("200.00")))
                .as("paid + still owed never exceeds principal + the schedule's interest")
                .isLessThanOrEqualTo(new BigDecimal("12000.00").add(scheduleInterest));
        // The README's worked example, to the cent.
        assertThat(view.get("schedule")).hasSize(13);
        assertThat(view.at("/schedule/0/principalDue").decimalValue()).isEqualByComparingTo("996.92");
        assertThat(view.at("/schedule/1/principalDue").decimalValue()).isEqualByComparingTo("916.92");
        assertThat(view.at("/schedule/12/principalDue").decimalValue()).isEqualByComparingTo("916.96");
        assertThat(view.at("/schedule/1/interestDue").decimalValue()).isEqualByComparingTo("110.03");
        assertThat(scheduleInterest).isEqualByComparingTo("835.20");
        assertThat(charges).isEqualByComparingTo("120.00");
        assertThat(view.get("remainingOnSchedule").decimalValue())
                .as("paid 200.00 + remaining = principal + the new schedule's interest")
                .isEqualByComparingTo("12635.20");
    }

    @Test
    void anExtensionNeverChargesAgainTheInterestWaived() {
        String note = open("12000.00", 12, today); // instalment 1 has earned 120.00
        Api.Answer waived = api.operator(() -> api.postKeyed(
                "/notes/" + note + "/interest-waivers",
                Map.of("amount", new BigDecimal("100.00"), "reason", "goodwill"),
                Api.newKey()));
        assertThat(waived.status()).as(waived.text()).isEqualTo(200);
        assertThat(api.extend(note, 1).status()).isEqualTo(200);

        JsonNode view = api.get("/notes/" + note).body();
        assertThat(view.get("schedule")).hasSize(13);
        assertThat(view.at("/note/interestOutstanding").decimalValue())
                .as("120.00 earned - 100.00 waived, nothing charged by the extension")
                .isEqualByComparingTo("20.00");
        assertThat(api.get("/notes/" + note + "/conservation")
                        .body()
                        .get("charges")
                        .decimalValue())
                .isEqualByComparingTo("20.00");
        assertThat(view.get("outstanding").decimalValue()).isEqualByComparingTo("12020.00");
    }

    @Test
    void payingExactlyInstalmentOneOnItsDueDateLeavesTheBorrowerCurrent() {
        String note = open("12000.00", 12, today.minusMonths(1));
        Api.Answer paid = api.repay(note, "T-1", "1120.00");
        assertThat(paid.status()).isEqualTo(200);
        assertThat(paid.body().get("interestPart").decimalValue()).isEqualByComparingTo("120.00");
        assertThat(paid.body().get("principalPart").decimalValue()).isEqualByComparingTo("1000.00");

        TestClock.advanceDays(1);
        try {
            api.overdueRun(today.plusDays(1));
            JsonNode after = api.get("/notes/" + note).body();
            assertThat(after.at("/note/status").asString()).isNotEqualTo("OVERDUE");
            assertThat(after.at("/note/penaltyOutstanding").decimalValue()).isEqualByComparingTo("0.00");
        } finally {
            TestClock.advanceDays(-1);
        }
    }

    @Test
    void thePenaltyAccruesOnTheOverdueAmountOnly() {
        String note = open("12000.00", 12, today.minusMonths(1).minusDays(1)); // instalment 1 due yesterday
        api.overdueRun(today);
        JsonNode after = api.get("/notes/" + note).body();
        assertThat(after.at("/note/status").asString()).isEqualTo("OVERDUE");
        // 1 120.00 overdue (instalment 1) × 0.05 % a day = 0.56, not 0.05 % of the whole 12 000.00
        assertThat(after.at("/note/penaltyOutstanding").decimalValue()).isEqualByComparingTo("0.56");
    }

    @Test
    void overdueClearsOnceTheOverdueInstalmentIsPaid() {
        String note = open("12000.00", 12, today.minusMonths(1).minusDays(1));
        api.overdueRun(today);
        assertThat(api.repay(note, "T-1", "1120.00").status()).isEqualTo(200);
        JsonNode after = api.get("/notes/" + note).body();
        assertThat(after.at("/note/status").asString()).isEqualTo("PARTIALLY_REPAID");
        assertThat(after.at("/note/penaltyOutstanding").decimalValue())
                .as("the penalty stays owed; it is not what makes a borrower overdue")
                .isEqualByComparingTo("0.56");
    }

    @Test
    void earlySettlementChargesTheInterestEarnedToDateOnly() {
        String note = open("12000.00", 12, today);
        Api.Answer settled = api.settle(note, "S-1");
        assertThat(settled.status()).isEqualTo(200);
        // principal + instalment 1's interest (its period has begun), not the whole term's 780.00
        assertThat(settled.body().get("amount").decimalValue()).isEqualByComparingTo("12120.00");
        assertThat(api.get("/notes/" + note).body().at("/note/status").asString())
                .isEqualTo("SETTLED");
    }

    static Map<String, Object> body(Object... pairs) {
        java.util.LinkedHashMap<String, Object> map = new java.util.LinkedHashMap<>();
        for (int i = 0; i < pairs.length; i += 2) {
            map.put((String) pairs[i], pairs[i + 1]);
        }
        return map;
    }
}
