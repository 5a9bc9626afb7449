package dev.leasehold.examples.loan;

import java.math.BigDecimal;
import java.math.RoundingMode;
import java.time.LocalDate;
import java.util.ArrayList;
import java.util.List;

/**
 * The money rules of one note (README, "Money rules"), on a working copy of its balances and
 * schedule; no I/O. What has been paid is kept as totals, and the totals settle the instalments
 * oldest first: instalment k's interest is settled once the interest paid or waived covers the
 * interest of instalments 1..k, its principal likewise. Not thread-safe (one per command).
 */
final class NoteLedger {

    /** 0.05 % a day on the overdue amount. */
    static final BigDecimal DAILY_PENALTY_RATE = new BigDecimal("0.0005");

    /** One instalment; {@code interest} is null until its period has begun (then it is earned). */
    static final class Line {
        final int period;
        final LocalDate dueDate;
        BigDecimal principalDue;
        BigDecimal interest;

        Line(int period, LocalDate dueDate, BigDecimal principalDue, BigDecimal interest) {
            this.period = period;
            this.dueDate = dueDate;
            this.principalDue = principalDue;
            this.interest = interest;
        }

        boolean earned() {
            return interest != null;
        }
    }

    /** What one payment settled. */
    record Parts(BigDecimal penalty, BigDecimal interest, BigDecimal principal) {
        BigDecimal total() {
            return penalty.add(interest).add(principal);
        }
    }

    /** Interest a period earned: booked as a charge. */
    record Earned(int period, BigDecimal amount) {}

    final BigDecimal principal;
    final BigDecimal annualRate;
    final LocalDate start;
    final List<Line> lines;
    BigDecimal principalOutstanding;
    BigDecimal interestOutstanding;
    BigDecimal penaltyOutstanding;

    NoteLedger(
            BigDecimal principal,
            BigDecimal annualRate,
            LocalDate start,
            List<Line> lines,
            BigDecimal principalOutstanding,
            BigDecimal interestOutstanding,
            BigDecimal penaltyOutstanding) {
        this.principal = principal;
        this.annualRate = annualRate;
        this.start = start;
        this.lines = lines;
        this.principalOutstanding = principalOutstanding;
        this.interestOutstanding = interestOutstanding;
        this.penaltyOutstanding = penaltyOutstanding;
    }

    /** A new note's schedule: equal principal per month (cents rounded down, the last takes the rest). */
    static List<Line> schedule(BigDecimal principal, int term, LocalDate start) {
        List<Line> lines = new ArrayList<>();
        BigDecimal each = principal.divide(BigDecimal.valueOf(term), 2, RoundingMode.DOWN);
        for (int period = 1; period <= term; period++) {
            BigDecimal due = period == term ? principal.subtract(each.multiply(BigDecimal.valueOf(term - 1))) : each;
            lines.add(new Line(period, start.plusMonths(period), Money.of(due), null));
        }
        return lines;
    }

    /** One month's interest on {@code principal}: principal × annual rate / 12, half-even to cents. */
    static BigDecimal monthlyInterest(BigDecimal principal, BigDecimal annualRate) {
        return principal.multiply(annualRate).divide(BigDecimal.valueOf(12), 2, RoundingMode.HALF_EVEN);
    }

    /** The first day of instalment {@code index}'s period: the start, or the day after the previous due date. */
    LocalDate periodStart(int index) {
        return index == 0 ? start : lines.get(index - 1).dueDate.plusDays(1);
    }

    BigDecimal outstanding() {
        return principalOutstanding.add(interestOutstanding).add(penaltyOutstanding);
    }

    private BigDecimal interestEarned() {
        BigDecimal total = Money.ZERO;
        for (Line line : lines) {
            if (line.earned()) {
                total = total.add(line.interest);
            }
        }
        return total;
    }

    /** Interest paid or waived so far. */
    private BigDecimal interestSettled() {
        return interestEarned().subtract(interestOutstanding);
    }

    private BigDecimal principalSettled() {
        return principal.subtract(principalOutstanding);
    }

    /** Instalment {@code index}'s unpaid interest: what the settled total leaves of it, oldest first. */
    BigDecimal interestUnpaid(int index) {
        BigDecimal before = Money.ZERO;
        for (int i = 0; i < index; i++) {
            if (lines.get(i).earned()) {
                before = before.add(lines.get(i).interest);
            }
        }
        Line line = lines.get(index);
        BigDecimal own = line.earned() ? line.interest : Money.ZERO;
        return unpaid(own, before, interestSettled());
    }

    /** Instalment {@code index}'s unpaid principal. */
    BigDecimal principalUnpaid(int index) {
        BigDecimal before = Money.ZERO;
        for (int i = 0; i < index; i++) {
            before = before.add(lines.get(i).principalDue);
        }
        return unpaid(lines.get(index).principalDue, before, principalSettled());
    }

    private static BigDecimal unpaid(BigDecimal own, BigDecimal before, BigDecimal settled) {
        BigDecimal covered = settled.subtract(before).max(BigDecimal.ZERO).min(own);
        return Money.of(own.subtract(covered));
    }

    /** Books the interest of every period begun by {@code today}, on the principal then outstanding. */
    List<Earned> accrue(LocalDate today) {
        List<Earned> earned = new ArrayList<>();
        for (int i = 0; i < lines.size(); i++) {
            Line line = lines.get(i);
            if (!line.earned() && !periodStart(i).isAfter(today)) {
                line.interest = monthlyInterest(principalOutstanding, annualRate);
                interestOutstanding = interestOutstanding.add(line.interest);
                earned.add(new Earned(line.period, line.interest));
            }
        }
        return earned;
    }

    /** Unpaid principal and interest of the instalments whose due date is before {@code today}. */
    BigDecimal overdueAmount(LocalDate today) {
        BigDecimal overdue = Money.ZERO;
        for (int i = 0; i < lines.size(); i++) {
            if (lines.get(i).dueDate.isBefore(today)) {
                overdue = overdue.add(interestUnpaid(i)).add(principalUnpaid(i));
            }
        }
        return overdue;
    }

    /** One day's penalty on what is overdue, half-even to cents. */
    BigDecimal dailyPenalty(LocalDate today) {
        return Money.of(overdueAmount(today).multiply(DAILY_PENALTY_RATE));
    }

    /**
     * Applies a payment: overdue instalments oldest first (interest, then principal), then the
     * penalty, then the later instalments oldest first (earned interest, then principal).
     */
    Parts pay(BigDecimal amount, LocalDate today) {
        BigDecimal[] left = {amount};
        BigDecimal interest = Money.ZERO;
        BigDecimal principalPart = Money.ZERO;
        int firstCurrent = 0;
        while (firstCurrent < lines.size() && lines.get(firstCurrent).dueDate.isBefore(today)) {
            firstCurrent++;
        }
        BigDecimal[] paid = payLines(0, firstCurrent, left);
        interest = interest.add(paid[0]);
        principalPart = principalPart.add(paid[1]);
        BigDecimal penalty = take(left, penaltyOutstanding);
        penaltyOutstanding = penaltyOutstanding.subtract(penalty);
        paid = payLines(firstCurrent, lines.size(), left);
        interest = interest.add(paid[0]);
        principalPart = principalPart.add(paid[1]);
        if (left[0].signum() != 0) {
            throw new IllegalStateException("payment exceeds what is owed by " + left[0]);
        }
        return new Parts(Money.of(penalty), Money.of(interest), Money.of(principalPart));
    }

    private BigDecimal[] payLines(int from, int to, BigDecimal[] left) {
        BigDecimal interest = Money.ZERO;
        BigDecimal principalPart = Money.ZERO;
        for (int i = from; i < to && left[0].signum() > 0; i++) {
            BigDecimal in = take(left, interestUnpaid(i));
            interestOutstanding = interestOutstanding.subtract(in);
            interest = interest.add(in);
            BigDecimal pr = take(left, principalUnpaid(i));
            principalOutstanding = principalOutstanding.subtract(pr);
            principalPart = principalPart.add(pr);
        }
        return new BigDecimal[] {interest, principalPart};
    }

    private static BigDecimal take(BigDecimal[] left, BigDecimal wanted) {
        BigDecimal part = left[0].min(wanted);
        left[0] = left[0].subtract(part);
        return part;
    }

    /** Puts back exactly what a payment settled. */
    void unpay(Parts parts) {
        penaltyOutstanding = penaltyOutstanding.add(parts.penalty());
        interestOutstanding = interestOutstanding.add(parts.interest());
        principalOutstanding = principalOutstanding.add(parts.principal());
    }

    /** Waives penalty first, then earned interest (oldest first); never principal. */
    Parts waive(BigDecimal amount) {
        BigDecimal penalty = amount.min(penaltyOutstanding);
        BigDecimal interest = amount.subtract(penalty);
        penaltyOutstanding = penaltyOutstanding.subtract(penalty);
        interestOutstanding = interestOutstanding.subtract(interest);
        return new Parts(Money.of(penalty), Money.of(interest), Money.ZERO);
    }

    BigDecimal waivable() {
        return penaltyOutstanding.add(interestOutstanding);
    }

    /** The index of the first instalment not yet due on {@code today}; {@code lines.size()} when the term is over. */
    int current(LocalDate today) {
        int c = 0;
        while (c < lines.size() && lines.get(c).dueDate.isBefore(today)) {
            c++;
        }
        return c;
    }

    /**
     * Re-schedules what is outstanding: the unpaid principal spread in equal parts over the current
     * instalment and those after it, plus {@code extraMonths} new ones. Earned interest, paid or
     * waived amounts and the instalments already due stay as they are.
     */
    void extend(int extraMonths, LocalDate today) {
        int c = current(today);
        BigDecimal paidAhead = Money.ZERO; // principal already paid towards instalments c.. (paid early)
        for (int i = c; i < lines.size(); i++) {
            paidAhead = paidAhead.add(lines.get(i).principalDue.subtract(principalUnpaid(i)));
        }
        BigDecimal current = lines.get(c).interest;
        int term = lines.size() + extraMonths;
        int count = term - c;
        BigDecimal each = principalOutstanding.divide(BigDecimal.valueOf(count), 2, RoundingMode.DOWN);
        BigDecimal last = principalOutstanding.subtract(each.multiply(BigDecimal.valueOf(count - 1)));
        while (lines.size() > c) {
            lines.remove(lines.size() - 1);
        }
        for (int period = c + 1; period <= term; period++) {
            BigDecimal due = period == term ? last : each;
            if (period == c + 1) {
                due = due.add(paidAhead);
            }
            lines.add(new Line(period, start.plusMonths(period), Money.of(due), period == c + 1 ? current : null));
        }
    }

    /**
     * What each instalment's interest will be when the borrower pays on schedule from now on: the
     * earned amount, or a month's interest on the principal left after the earlier instalments.
     */
    BigDecimal projectedInterest(int index) {
        Line line = lines.get(index);
        if (line.earned()) {
            return line.interest;
        }
        BigDecimal scheduledBefore = Money.ZERO;
        for (int i = 0; i < index; i++) {
            scheduledBefore = scheduledBefore.add(lines.get(i).principalDue);
        }
        BigDecimal left =
                principal.subtract(principalSettled().max(scheduledBefore)).max(BigDecimal.ZERO);
        return monthlyInterest(left, annualRate);
    }
}
