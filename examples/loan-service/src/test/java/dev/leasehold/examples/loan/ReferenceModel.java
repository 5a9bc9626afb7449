package dev.leasehold.examples.loan;

import java.math.BigDecimal;
import java.math.RoundingMode;
import java.time.LocalDate;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The README's money rules restated plainly, for the tests to hold the service to: kept apart from
 * the service's code on purpose. It tracks what has been paid and waived as running totals and
 * settles instalments with them oldest first, as the rules say; every operation answers the HTTP
 * status the service must give.
 */
final class ReferenceModel {

    private static final BigDecimal CENT = new BigDecimal("0.01");
    private static final BigDecimal ZERO = new BigDecimal("0.00");

    /** An instalment: due date, principal, and its interest once its period has begun (else null). */
    static final class Instalment {
        final LocalDate due;
        BigDecimal principal;
        BigDecimal interest;

        Instalment(LocalDate due, BigDecimal principal) {
            this.due = due;
            this.principal = principal;
        }
    }

    /** A repayment the model accepted. */
    record Flow(
            String trade,
            String kind,
            BigDecimal amount,
            BigDecimal penalty,
            BigDecimal interest,
            BigDecimal principal,
            boolean reversed) {}

    final BigDecimal loan;
    final BigDecimal rate;
    final LocalDate start;
    final List<Instalment> instalments = new ArrayList<>();
    final Map<String, Flow> flows = new LinkedHashMap<>();
    private final java.util.Set<LocalDate> penaltyDates = new java.util.HashSet<>();
    BigDecimal principalPaid = ZERO;
    BigDecimal interestPaid = ZERO;
    BigDecimal interestWaived = ZERO;
    BigDecimal penaltyCharged = ZERO;
    BigDecimal penaltyPaid = ZERO;
    BigDecimal penaltyWaived = ZERO;
    BigDecimal writtenOff = ZERO;
    boolean writeOff;
    int penaltyDays;

    ReferenceModel(BigDecimal loan, BigDecimal rate, int months, LocalDate start, LocalDate today) {
        this.loan = loan;
        this.rate = rate;
        this.start = start;
        BigDecimal part = loan.divide(BigDecimal.valueOf(months), 2, RoundingMode.DOWN);
        BigDecimal given = ZERO;
        for (int m = 1; m <= months; m++) {
            BigDecimal p = m < months ? part : loan.subtract(given);
            instalments.add(new Instalment(start.plusMonths(m), p));
            given = given.add(p);
        }
        earn(today);
        restatus(today);
    }

    // ------------------------------------------------------------ what is owed

    BigDecimal principalOwed() {
        return writeOff ? ZERO : loan.subtract(principalPaid);
    }

    BigDecimal interestOwed() {
        return writeOff ? ZERO : earnedInterest().subtract(interestPaid).subtract(interestWaived);
    }

    BigDecimal penaltyOwed() {
        return writeOff ? ZERO : penaltyCharged.subtract(penaltyPaid).subtract(penaltyWaived);
    }

    BigDecimal owed() {
        return principalOwed().add(interestOwed()).add(penaltyOwed());
    }

    BigDecimal earnedInterest() {
        BigDecimal sum = ZERO;
        for (Instalment i : instalments) {
            if (i.interest != null) {
                sum = sum.add(i.interest);
            }
        }
        return sum;
    }

    boolean open() {
        return !writeOff && owed().signum() > 0;
    }

    String status() {
        if (writeOff) {
            return "WRITTEN_OFF";
        }
        if (owed().signum() == 0) {
            return "SETTLED";
        }
        return status;
    }

    private String status = "NORMAL";

    /** Unpaid [interest, principal] of each instalment, settling the paid totals oldest first. */
    private BigDecimal[][] unpaid() {
        BigDecimal interestLeft = interestPaid.add(interestWaived);
        BigDecimal principalLeft = principalPaid;
        BigDecimal[][] result = new BigDecimal[instalments.size()][];
        for (int k = 0; k < instalments.size(); k++) {
            Instalment i = instalments.get(k);
            BigDecimal interest = i.interest == null ? ZERO : i.interest;
            BigDecimal coveredInterest = interest.min(interestLeft);
            interestLeft = interestLeft.subtract(coveredInterest);
            BigDecimal coveredPrincipal = i.principal.min(principalLeft);
            principalLeft = principalLeft.subtract(coveredPrincipal);
            result[k] = new BigDecimal[] {interest.subtract(coveredInterest), i.principal.subtract(coveredPrincipal)};
        }
        return result;
    }

    BigDecimal overdue(LocalDate day) {
        BigDecimal[][] unpaid = unpaid();
        BigDecimal sum = ZERO;
        for (int k = 0; k < instalments.size(); k++) {
            if (day.isAfter(instalments.get(k).due)) {
                sum = sum.add(unpaid[k][0]).add(unpaid[k][1]);
            }
        }
        return sum;
    }

    /**
     * Interest of every period begun by {@code today}: a month's interest on the principal then owed.
     * Booked by a command that succeeds (or the overdue run); a refused command books nothing, so
     * the undo it returns takes the interest back off.
     */
    private Runnable earn(LocalDate today) {
        List<Instalment> earned = new ArrayList<>();
        for (int k = 0; k < instalments.size(); k++) {
            LocalDate begins = k == 0 ? start : instalments.get(k - 1).due.plusDays(1);
            Instalment i = instalments.get(k);
            if (i.interest == null && !begins.isAfter(today)) {
                i.interest = principalOwed().multiply(rate).divide(BigDecimal.valueOf(12), 2, RoundingMode.HALF_EVEN);
                earned.add(i);
            }
        }
        return () -> earned.forEach(i -> i.interest = null);
    }

    private void restatus(LocalDate today) {
        if (overdue(today).signum() > 0) {
            status = "OVERDUE";
        } else {
            status = flows.values().stream().anyMatch(f -> !f.reversed()) ? "PARTIALLY_REPAID" : "NORMAL";
        }
    }

    // ------------------------------------------------------------ commands (each returns the HTTP status)

    int repay(String trade, BigDecimal amount, LocalDate today) {
        return pay(trade, "REPAYMENT", amount, today);
    }

    int settle(String trade, LocalDate today) {
        return pay(trade, "SETTLEMENT", null, today);
    }

    private int pay(String trade, String kind, BigDecimal amount, LocalDate today) {
        Flow seen = flows.get(trade);
        if (seen != null) {
            if (!seen.kind().equals(kind) || (amount != null && seen.amount().compareTo(amount) != 0)) {
                return 422;
            }
            return seen.reversed() ? 409 : 200;
        }
        if (!open()) {
            return 409;
        }
        Runnable refused = earn(today);
        BigDecimal pay = amount == null ? owed() : amount;
        if (pay.compareTo(owed()) > 0) {
            refused.run();
            return 422;
        }
        BigDecimal[][] unpaid = unpaid();
        // instalments past due, oldest first; then the penalty; then the later instalments
        BigDecimal[] pastDue = settle(unpaid, pay, today, true);
        BigDecimal penalty = pastDue[0].min(penaltyOwed());
        BigDecimal[] later = settle(unpaid, pastDue[0].subtract(penalty), today, false);
        BigDecimal interest = pastDue[1].add(later[1]);
        BigDecimal principal = pastDue[2].add(later[2]);
        interestPaid = interestPaid.add(interest);
        principalPaid = principalPaid.add(principal);
        penaltyPaid = penaltyPaid.add(penalty);
        flows.put(trade, new Flow(trade, kind, pay, penalty, interest, principal, false));
        restatus(today);
        return 200;
    }

    /** Pays {@code left} into the instalments past due (or not), oldest first: [left, interest, principal]. */
    private BigDecimal[] settle(BigDecimal[][] unpaid, BigDecimal left, LocalDate today, boolean pastDue) {
        BigDecimal interest = ZERO;
        BigDecimal principal = ZERO;
        for (int k = 0; k < instalments.size(); k++) {
            if (today.isAfter(instalments.get(k).due) == pastDue) {
                BigDecimal in = left.min(unpaid[k][0]);
                left = left.subtract(in);
                BigDecimal pr = left.min(unpaid[k][1]);
                left = left.subtract(pr);
                interest = interest.add(in);
                principal = principal.add(pr);
            }
        }
        return new BigDecimal[] {left, interest, principal};
    }

    int reverse(String trade, LocalDate today) {
        Flow flow = flows.get(trade);
        if (writeOff) {
            return 409;
        }
        if (flow.reversed()) {
            return 409;
        }
        if (open()) {
            earn(today);
        }
        flows.put(
                trade,
                new Flow(
                        flow.trade(),
                        flow.kind(),
                        flow.amount(),
                        flow.penalty(),
                        flow.interest(),
                        flow.principal(),
                        true));
        interestPaid = interestPaid.subtract(flow.interest());
        principalPaid = principalPaid.subtract(flow.principal());
        penaltyPaid = penaltyPaid.subtract(flow.penalty());
        restatus(today);
        return 200;
    }

    int waive(BigDecimal amount, LocalDate today) {
        if (!open()) {
            return 409;
        }
        Runnable refused = earn(today);
        if (amount.compareTo(penaltyOwed().add(interestOwed())) > 0) {
            refused.run();
            return 422;
        }
        BigDecimal penalty = amount.min(penaltyOwed());
        penaltyWaived = penaltyWaived.add(penalty);
        interestWaived = interestWaived.add(amount.subtract(penalty));
        restatus(today);
        return 200;
    }

    int extend(int months, LocalDate today) {
        if (!open()) {
            return 409;
        }
        Runnable refused = earn(today);
        int current = 0;
        while (current < instalments.size() && today.isAfter(instalments.get(current).due)) {
            current++;
        }
        if (overdue(today).signum() > 0
                || current == instalments.size()
                || principalOwed().signum() == 0) {
            refused.run();
            return 409;
        }
        BigDecimal[][] unpaid = unpaid();
        BigDecimal paidAhead = ZERO;
        for (int k = current; k < instalments.size(); k++) {
            paidAhead = paidAhead.add(instalments.get(k).principal.subtract(unpaid[k][1]));
        }
        BigDecimal currentInterest = instalments.get(current).interest;
        int total = instalments.size() + months;
        int spread = total - current;
        BigDecimal part = principalOwed().divide(BigDecimal.valueOf(spread), 2, RoundingMode.DOWN);
        BigDecimal lastPart = principalOwed().subtract(part.multiply(BigDecimal.valueOf(spread - 1)));
        instalments.subList(current, instalments.size()).clear();
        for (int m = current + 1; m <= total; m++) {
            Instalment i = new Instalment(start.plusMonths(m), m == total ? lastPart : part);
            if (m == current + 1) {
                i.principal = i.principal.add(paidAhead);
                i.interest = currentInterest;
            }
            instalments.add(i);
        }
        restatus(today);
        return 200;
    }

    int writeOff(LocalDate today) {
        if (!open()) {
            return 409;
        }
        earn(today);
        writtenOff = owed();
        writeOff = true;
        return 200;
    }

    /** The overdue run for {@code today}: interest earned, one penalty a day on the overdue amount. */
    /**
     * The overdue run for {@code today}: at most one penalty per date. A run that found nothing
     * overdue charged nothing, so a later run for the same date (after a reversal, say) charges it.
     */
    void overdueRun(LocalDate today) {
        if (!open()) {
            return;
        }
        earn(today);
        BigDecimal penalty = overdue(today).multiply(new BigDecimal("0.0005")).setScale(2, RoundingMode.HALF_EVEN);
        if (!penaltyDates.contains(today) && penalty.compareTo(CENT) >= 0) {
            penaltyDates.add(today);
            penaltyCharged = penaltyCharged.add(penalty);
            penaltyDays++;
        }
        restatus(today);
    }

    /** Principal + charges − accepted repayments: what conservation says is owed. */
    BigDecimal charges() {
        return earnedInterest()
                .add(penaltyCharged)
                .subtract(interestWaived)
                .subtract(penaltyWaived)
                .subtract(writtenOff);
    }
}
