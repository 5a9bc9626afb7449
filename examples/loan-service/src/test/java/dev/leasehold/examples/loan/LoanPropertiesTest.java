package dev.leasehold.examples.loan;

import static org.assertj.core.api.Assertions.assertThat;

import java.math.BigDecimal;
import java.math.RoundingMode;
import java.time.LocalDate;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.atomic.AtomicLong;
import net.jqwik.api.Arbitraries;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.Combinators;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.Provide;
import net.jqwik.api.lifecycle.AfterContainer;
import net.jqwik.api.lifecycle.BeforeContainer;
import org.springframework.boot.builder.SpringApplicationBuilder;
import org.springframework.boot.web.server.context.WebServerApplicationContext;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.security.provisioning.InMemoryUserDetailsManager;
import tools.jackson.databind.JsonNode;

/**
 * Random sequences of open / repay / duplicate / reuse-with-other-amount / reverse / waive / extend
 * / overdue run / settle / write-off / days passing, sent to the running service over HTTP and to
 * the {@link ReferenceModel}: after every step the answer's status and the note's balances and
 * status equal the model's, nothing is negative, conservation holds, and every retried command
 * (duplicate trade number, repeated Idempotency-Key) is applied once. A fixed seed and
 * {@code jqwik.tries.default} tries (8 in the build; a long run passes {@code -Djqwik.tries.default=N}).
 */
class LoanPropertiesTest {

    private static ConfigurableApplicationContext app;
    private static int port;
    static final AtomicLong STEPS = new AtomicLong();
    static final AtomicLong SEQUENCES = new AtomicLong();
    static final AtomicLong FAILURES = new AtomicLong();

    @BeforeContainer
    static void start() {
        app = new SpringApplicationBuilder(LoanServiceApplication.class, LoanTestSupport.class)
                .properties(
                        "server.port=0",
                        "loan.demo.enabled=false",
                        "loan.overdue.cron=-",
                        "spring.datasource.url=jdbc:h2:mem:loan-properties;DB_CLOSE_DELAY=-1",
                        "logging.level.root=WARN")
                .run();
        port = ((WebServerApplicationContext) app).getWebServer().getPort();
    }

    @AfterContainer
    static void stop() {
        System.out.println("loan properties: " + SEQUENCES.get() + " sequences, " + STEPS.get() + " steps, "
                + FAILURES.get() + " failures");
        TestClock.reset(); // the other test classes of this JVM start from today again
        if (app != null) {
            app.close();
        }
    }

    // ------------------------------------------------------------------ steps

    sealed interface Step {}

    record Repay(int percent) implements Step {}

    record PayInstalment() implements Step {}

    record Duplicate() implements Step {}

    record Reuse(int cents) implements Step {}

    record Reverse(int pick, boolean retry) implements Step {}

    record Waive(int percent, boolean retry) implements Step {}

    record Extend(int months, boolean retry) implements Step {}

    record OverdueRun() implements Step {}

    record Advance(int days) implements Step {}

    record Settle(boolean retry) implements Step {}

    record WriteOff(boolean retry) implements Step {}

    record Loan(int hundreds, String rate, int months, int backdays) {}

    @Provide
    Arbitrary<Loan> loans() {
        return Combinators.combine(
                        Arbitraries.integers().between(10, 500),
                        Arbitraries.of("0.06", "0.085", "0.12", "0.18", "0.24"),
                        Arbitraries.integers().between(1, 18),
                        Arbitraries.integers().between(0, 70))
                .as(Loan::new);
    }

    @Provide
    Arbitrary<List<Step>> steps() {
        Arbitrary<Step> step = Arbitraries.frequencyOf(
                net.jqwik.api.Tuple.of(6, Arbitraries.integers().between(1, 115).map(Repay::new)),
                net.jqwik.api.Tuple.of(3, Arbitraries.just(new PayInstalment())),
                net.jqwik.api.Tuple.of(3, Arbitraries.just(new Duplicate())),
                net.jqwik.api.Tuple.of(2, Arbitraries.integers().between(1, 500).map(Reuse::new)),
                net.jqwik.api.Tuple.of(
                        2,
                        Combinators.combine(Arbitraries.integers().between(0, 9), Arbitraries.of(true, false))
                                .as(Reverse::new)),
                net.jqwik.api.Tuple.of(
                        2,
                        Combinators.combine(Arbitraries.integers().between(1, 110), Arbitraries.of(true, false))
                                .as(Waive::new)),
                net.jqwik.api.Tuple.of(
                        2,
                        Combinators.combine(Arbitraries.integers().between(1, 6), Arbitraries.of(true, false))
                                .as(Extend::new)),
                net.jqwik.api.Tuple.of(4, Arbitraries.just(new OverdueRun())),
                net.jqwik.api.Tuple.of(6, Arbitraries.integers().between(1, 45).map(Advance::new)),
                net.jqwik.api.Tuple.of(1, Arbitraries.of(true, false).map(Settle::new)),
                net.jqwik.api.Tuple.of(1, Arbitraries.of(true, false).map(WriteOff::new)));
        return step.list().ofMinSize(3).ofMaxSize(16);
    }

    // ------------------------------------------------------------------ the property

    @Property(seed = "20260115")
    void theServiceKeepsTheBooksTheRulesSay(@ForAll("loans") Loan loan, @ForAll("steps") List<Step> steps) {
        try {
            Run run = new Run(loan);
            for (Step step : steps) {
                run.apply(step);
                run.check(step);
                STEPS.incrementAndGet();
            }
            SEQUENCES.incrementAndGet();
        } catch (AssertionError e) {
            FAILURES.incrementAndGet(); // shrinking's tries included
            throw e;
        }
    }

    /** A borrower who pays each instalment on its due date is never OVERDUE and never pays a penalty. */
    @Property(seed = "20260116", tries = 2)
    void anOnTimePayerIsNeverOverdue(@ForAll("loans") Loan loan) {
        Run run = new Run(new Loan(loan.hundreds(), loan.rate(), Math.min(loan.months(), 6), 0));
        while (run.model.open()) {
            LocalDate due = run.model.instalments.stream()
                    .map(i -> i.due)
                    .filter(d -> !d.isBefore(run.today()))
                    .findFirst()
                    .orElseThrow();
            run.apply(new Advance((int) (due.toEpochDay() - run.today().toEpochDay())));
            run.apply(new PayInstalment());
            run.check(new PayInstalment());
            run.apply(new Advance(1));
            run.apply(new OverdueRun());
            run.check(new OverdueRun());
            JsonNode view = run.view();
            assertThat(view.at("/note/status").asString()).isNotEqualTo("OVERDUE");
            assertThat(view.at("/note/penaltyOutstanding").decimalValue()).isEqualByComparingTo("0");
            STEPS.incrementAndGet();
        }
        assertThat(run.view().at("/note/status").asString()).isEqualTo("SETTLED");
        assertThat(run.model.penaltyCharged).isEqualByComparingTo("0");
        SEQUENCES.incrementAndGet();
    }

    /** One try: a fresh tenant and note in the service, and the same note in the model. */
    final class Run {
        final Api api;
        final String note;
        final ReferenceModel model;
        final List<String> trades = new ArrayList<>();
        final Map<String, String> flowIds = new java.util.HashMap<>();
        String lastTrade;
        BigDecimal lastAmount;
        int expected;
        Api.Answer answer;

        Run(Loan loan) {
            // Every try starts on the real date: a seed and a sample replay the same try, and
            // shrinking works on a failure that the business date of earlier tries does not hide.
            TestClock.reset();
            String tenant = "p" + UUID.randomUUID().toString().substring(0, 8);
            app.getBean(LoanRepository.class).insertTenant(tenant, "property tenant");
            LoanTestSupport.principals(app.getBean(InMemoryUserDetailsManager.class), tenant);
            api = new Api(port, tenant);
            note = "N" + UUID.randomUUID().toString().substring(0, 12).toUpperCase();
            BigDecimal principal = BigDecimal.valueOf(loan.hundreds() * 100L).setScale(2);
            LocalDate start = today().minusDays(loan.backdays());
            app.getBean(LoanService.class)
                    .open(tenant, note, "C1", principal, new BigDecimal(loan.rate()), loan.months(), start);
            model = new ReferenceModel(principal, new BigDecimal(loan.rate()), loan.months(), start, today());
            check(null);
        }

        LocalDate today() {
            return app.getBean(BusinessCalendar.class).today();
        }

        JsonNode view() {
            return api.get("/notes/" + note).body();
        }

        void apply(Step step) {
            LocalDate today = today();
            expected = -1;
            answer = null;
            if (step instanceof Repay r) {
                BigDecimal owed = model.owed();
                BigDecimal amount = owed.multiply(BigDecimal.valueOf(r.percent()))
                        .divide(BigDecimal.valueOf(100), 2, RoundingMode.DOWN)
                        .max(new BigDecimal("0.01"));
                pay(amount, today);
            } else if (step instanceof PayInstalment p) {
                BigDecimal due = instalmentDue(today);
                pay(due.signum() > 0 ? due : new BigDecimal("0.01"), today);
            } else if (step instanceof Duplicate d) {
                if (lastTrade == null) {
                    return;
                }
                boolean seen = model.flows.containsKey(lastTrade);
                expected = model.repay(lastTrade, lastAmount, today);
                answer = api.repay(note, lastTrade, lastAmount.toPlainString());
                if (expected == 200 && !seen) {
                    // refused before (e.g. above what was owed then), accepted now as a first payment
                    assertThat(answer.header("Repayment-Duplicate"))
                            .as("a first acceptance of %s: %s", lastTrade, answer.text())
                            .isNull();
                    remember(lastTrade);
                } else if (expected == 200) {
                    assertThat(answer.status())
                            .as("duplicate of %s %s: %s", lastTrade, lastAmount, answer.text())
                            .isEqualTo(200);
                    assertThat(answer.header("Repayment-Duplicate"))
                            .as("duplicate of %s %s: %s", lastTrade, lastAmount, answer.text())
                            .isEqualTo("true");
                }
            } else if (step instanceof Reuse u) {
                if (lastTrade == null) {
                    return;
                }
                BigDecimal other = lastAmount.add(BigDecimal.valueOf(u.cents(), 2));
                expected = model.repay(lastTrade, other, today);
                answer = api.repay(note, lastTrade, other.toPlainString());
            } else if (step instanceof Reverse v) {
                if (trades.isEmpty()) {
                    return;
                }
                String trade = trades.get(v.pick() % trades.size());
                expected = model.reverse(trade, today);
                command(
                        "/notes/" + note + "/repayments/" + flowIds.get(trade) + "/reversal",
                        Map.of("reason", "bounced"),
                        v.retry());
            } else if (step instanceof Waive w) {
                BigDecimal waivable =
                        model.open() ? model.penaltyOwed().add(interestOwedAfterEarning(today)) : BigDecimal.ZERO;
                BigDecimal amount = waivable.multiply(BigDecimal.valueOf(w.percent()))
                        .divide(BigDecimal.valueOf(100), 2, RoundingMode.DOWN)
                        .max(new BigDecimal("0.01"));
                expected = model.waive(amount, today);
                command(
                        "/notes/" + note + "/interest-waivers",
                        Map.of("amount", amount, "reason", "goodwill"),
                        w.retry());
            } else if (step instanceof Extend e) {
                expected = model.extend(e.months(), today);
                command("/notes/" + note + "/extension", Map.of("extraMonths", e.months()), e.retry());
            } else if (step instanceof OverdueRun o) {
                model.overdueRun(today);
                expected = 200;
                answer = api.overdueRun(today);
            } else if (step instanceof Advance a) {
                TestClock.advanceDays(a.days());
                expected = -1;
            } else if (step instanceof Settle s) {
                String trade =
                        "S" + trades.size() + "-" + UUID.randomUUID().toString().substring(0, 6);
                expected = model.settle(trade, today);
                answer = api.settle(note, trade);
                if (expected == 200) {
                    remember(trade);
                    if (s.retry()) {
                        Api.Answer again = api.settle(note, trade);
                        assertThat(again.status()).isEqualTo(200);
                        assertThat(again.header("Repayment-Duplicate")).isEqualTo("true");
                        assertThat(again.body().get("flowId"))
                                .isEqualTo(answer.body().get("flowId"));
                    }
                }
            } else if (step instanceof WriteOff w) {
                expected = model.writeOff(today);
                command("/notes/" + note + "/write-off", Map.of("reason", "uncollectable"), w.retry());
            }
        }

        private BigDecimal interestOwedAfterEarning(LocalDate today) {
            // What the service will find waivable: earned interest includes periods begun by today.
            BigDecimal owed = model.interestOwed();
            for (int k = 0; k < model.instalments.size(); k++) {
                ReferenceModel.Instalment i = model.instalments.get(k);
                LocalDate begins =
                        k == 0 ? model.start : model.instalments.get(k - 1).due.plusDays(1);
                if (i.interest == null && !begins.isAfter(today)) {
                    owed = owed.add(model.principalOwed()
                            .multiply(model.rate)
                            .divide(BigDecimal.valueOf(12), 2, RoundingMode.HALF_EVEN));
                }
            }
            return owed;
        }

        /** What the service's schedule says is due now (past-due instalments, the penalty, the current one). */
        private BigDecimal instalmentDue(LocalDate today) {
            JsonNode view = view();
            BigDecimal due = view.at("/note/penaltyOutstanding").decimalValue();
            for (JsonNode line : view.get("schedule")) {
                LocalDate date = LocalDate.parse(line.get("dueDate").asString());
                BigDecimal unpaid = line.get("principalUnpaid")
                        .decimalValue()
                        .add(line.get("interestUnpaid").decimalValue());
                if (date.isBefore(today)) {
                    due = due.add(unpaid);
                } else if (unpaid.signum() > 0 || !line.get("interestEarned").asBoolean()) {
                    if (line.get("interestEarned").asBoolean()
                            || !LocalDate.parse(line.get("dueDate").asString()).isAfter(today)) {
                        due = due.add(unpaid);
                    }
                    break;
                }
            }
            return due.min(view.get("outstanding").decimalValue());
        }

        private void pay(BigDecimal amount, LocalDate today) {
            String trade =
                    "T" + trades.size() + "-" + UUID.randomUUID().toString().substring(0, 6);
            expected = model.repay(trade, amount, today);
            answer = api.repay(note, trade, amount.toPlainString());
            lastTrade = trade;
            lastAmount = amount;
            if (expected == 200) {
                remember(trade);
            }
        }

        private void remember(String trade) {
            trades.add(trade);
            flowIds.put(trade, answer.body().get("flowId").asString());
        }

        /** An operator command with a fresh Idempotency-Key; a retry sends it again and must get the same answer. */
        private void command(String path, Object body, boolean retry) {
            String key = Api.newKey();
            answer = api.operator(() -> api.postKeyed(path, body, key));
            if (retry && answer.status() == 200) {
                Api.Answer again = api.operator(() -> api.postKeyed(path, body, key));
                assertThat(again.status()).as("a retried command replays").isEqualTo(200);
                assertThat(again.header("Idempotent-Replayed")).isEqualTo("true");
                assertThat(again.body()).isEqualTo(answer.body());
            }
        }

        void check(Step step) {
            if (step != null && expected >= 0 && answer != null) {
                assertThat(answer.status())
                        .as("answer to %s: %s", step, answer.text())
                        .isEqualTo(expected);
            }
            JsonNode n = view().get("note");
            String context = "after " + step + " on " + today() + ": " + n;
            assertThat(n.get("principalOutstanding").decimalValue())
                    .as(context)
                    .isEqualByComparingTo(model.principalOwed());
            assertThat(n.get("interestOutstanding").decimalValue())
                    .as(context)
                    .isEqualByComparingTo(model.interestOwed());
            assertThat(n.get("penaltyOutstanding").decimalValue())
                    .as(context)
                    .isEqualByComparingTo(model.penaltyOwed());
            assertThat(n.get("status").asString()).as(context).isEqualTo(model.status());
            for (String f : List.of("principalOutstanding", "interestOutstanding", "penaltyOutstanding")) {
                assertThat(n.get(f).decimalValue().signum())
                        .as("never negative: " + f)
                        .isGreaterThanOrEqualTo(0);
            }
            JsonNode conservation = api.get("/notes/" + note + "/conservation").body();
            assertThat(conservation.get("holds").asBoolean())
                    .as("conservation " + conservation)
                    .isTrue();
            assertThat(conservation.get("charges").decimalValue()).as(context).isEqualByComparingTo(model.charges());
        }
    }
}
