package dev.leasehold.examples.loan;

import static org.assertj.core.api.Assertions.assertThat;

import java.math.BigDecimal;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** Callers are authenticated principals; tenants see their own notes, operators act as themselves. */
class SecurityTest extends H2ServiceTest {

    @Test
    void anAnonymousRepaymentIsRefusedWith401() {
        String note = open("1000.00", 6, today);
        Api.Answer answer = new Api(port, tenant).anonymous().repay(note, "T-1", "5.00");
        assertThat(answer.status()).isEqualTo(401);
        assertThat(answer.header("Content-Type")).contains("application/problem+json");
        assertThat(api.get("/notes/" + note + "/repayments").body()).isEmpty();
    }

    @Test
    void aChannelRepaysOnlyItsOwnTenantsNotes() {
        String note = open("1000.00", 6, today);
        String other = "o" + tenant;
        repository.insertTenant(other, "other tenant");
        LoanTestSupport.principals(users, other);
        Api.Answer answer =
                new Api(port, tenant).as(other + "-app", other + "-app-pw").repay(note, "T-1", "5.00");
        assertThat(answer.status()).isEqualTo(403);
        assertThat(api.get("/notes/" + note + "/repayments").body()).isEmpty();
    }

    @Test
    void operatorCommandsNeedTheOperatorRole() {
        String note = open("12000.00", 12, today);
        Api.Answer waiver = api.postKeyed(
                "/notes/" + note + "/interest-waivers",
                Map.of("amount", new BigDecimal("10.00"), "reason", "x"),
                Api.newKey());
        assertThat(waiver.status()).as("a channel may not waive").isEqualTo(403);
        assertThat(api.post("/overdue-runs", Map.of()).status()).isEqualTo(403);
        assertThat(api.postKeyed("/notes/" + note + "/write-off", Map.of("reason", "x"), Api.newKey())
                        .status())
                .isEqualTo(403);
        assertThat(api.postKeyed("/notes/" + note + "/extension", Map.of("extraMonths", 1), Api.newKey())
                        .status())
                .isEqualTo(403);
    }

    @Test
    void theWaiverRecordsThePrincipalAsOperatorNotANameFromTheBody() {
        String note = open("12000.00", 12, today);
        Api.Answer named = api.operator(() -> api.postKeyed(
                "/notes/" + note + "/interest-waivers",
                Map.of("amount", new BigDecimal("10.00"), "reason", "goodwill", "operator", "mallory"),
                Api.newKey()));
        assertThat(named.status()).as("a body naming its operator is refused").isEqualTo(400);
        assertThat(named.body().get("detail").asString()).contains("'operator'");
        Api.Answer waiver = api.operator(() -> api.postKeyed(
                "/notes/" + note + "/interest-waivers",
                Map.of("amount", new BigDecimal("10.00"), "reason", "goodwill"),
                Api.newKey()));
        assertThat(waiver.status()).isEqualTo(200);
        List<String> recorded = jdbc.queryForList(
                "SELECT note FROM note_charge WHERE tenant_id = ? AND borrow_no = ? AND kind = 'WAIVER'",
                String.class,
                tenant,
                note);
        assertThat(recorded)
                .singleElement()
                .asString()
                .startsWith("by " + tenant + "-ops:")
                .doesNotContain("mallory");
    }

    @Test
    void theOverdueRunNeverRunsForADateAfterTheBusinessDate() {
        Api.Answer answer = api.overdueRun(today.plusDays(1));
        assertThat(answer.status()).isEqualTo(422);
        assertThat(answer.text()).contains("after the business date");
    }

    @Test
    void theDegradeSwitchIsUsableByAnAdminOnly() {
        Map<String, String> bypass = Map.of("mode", "bypass", "reason", "test");
        assertThat(api.operator(() -> api.post("/actuator/leaseholdmode", bypass))
                        .status())
                .isEqualTo(403);
        LoanSecurity.addUser(users, tenant + "-admin", "admin-pw", null, "ADMIN");
        Api admin = new Api(port, tenant).as(tenant + "-admin", "admin-pw");
        Api.Answer changed = admin.post("/actuator/leaseholdmode", bypass);
        try {
            assertThat(changed.status()).as(changed.text()).isEqualTo(200);
            assertThat(changed.body().get("mode").asString()).isEqualTo("BYPASS");
        } finally {
            assertThat(admin.post("/actuator/leaseholdmode", Map.of("mode", "enforce", "reason", "test done"))
                            .status())
                    .isEqualTo(200);
        }
    }

    @Test
    void theDemoStormRunsForAnOperatorOfItsOwnTenantOnly() {
        String other = "o" + tenant;
        repository.insertTenant(other, "other tenant");
        loans.open(
                other,
                "STORM-1",
                "C900",
                new java.math.BigDecimal("100000.00"),
                new java.math.BigDecimal("0.12"),
                12,
                today,
                true);
        String storm = "/api/demo/storm?tenant=" + other + "&requests=5&threads=1";
        assertThat(api.operator(() -> api.post(storm, Map.of())).status())
                .as("an operator of another tenant")
                .isEqualTo(403);
        assertThat(api.post(storm, Map.of()).status()).as("a channel").isEqualTo(403);
        assertThat(new Api(port, tenant).anonymous().post(storm, Map.of()).status())
                .isEqualTo(401);
        assertThat(loans.conservation(other, "STORM-1").acceptedFlows())
                .as("nothing booked on the other tenant's note")
                .isZero();
    }

    @Test
    void healthIsOpenForProbes() {
        Api.Answer health = new Api(port, tenant).anonymous().getRaw("/actuator/health");
        assertThat(health.status()).isEqualTo(200);
        assertThat(health.body().at("/components/leasehold/status").asString()).isEqualTo("UP");
        assertThat(new Api(port, tenant)
                        .anonymous()
                        .getRaw("/actuator/leasehold")
                        .status())
                .isEqualTo(401);
    }
}
