package dev.leasehold.examples.loan;

import java.math.BigDecimal;
import java.time.LocalDate;
import java.util.List;

/** The credit core's values. */
final class Domain {

    private Domain() {}

    /** The life of a loan note. */
    enum NoteStatus {
        NORMAL,
        PARTIALLY_REPAID,
        SETTLED,
        OVERDUE,
        WRITTEN_OFF;

        boolean acceptsRepayments() {
            return this != SETTLED && this != WRITTEN_OFF;
        }
    }

    /** Where a repayment came from. */
    enum Channel {
        APP,
        COUNTER,
        AUTO_DEBIT,
        AGGREGATOR
    }

    record Note(
            String tenantId,
            String borrowNo,
            String customerId,
            BigDecimal principal,
            BigDecimal principalOutstanding,
            BigDecimal interestOutstanding,
            BigDecimal penaltyOutstanding,
            BigDecimal annualRate,
            int termMonths,
            LocalDate startDate,
            NoteStatus status,
            long version,
            boolean demo) {

        BigDecimal outstanding() {
            return principalOutstanding.add(interestOutstanding).add(penaltyOutstanding);
        }
    }

    /**
     * One instalment as the borrower sees it: its interest is the earned amount once its period has
     * begun ({@code interestEarned}), a projection before; what is still unpaid of it, and its state.
     */
    record ScheduleLine(
            int period,
            LocalDate dueDate,
            BigDecimal principalDue,
            BigDecimal interestDue,
            boolean interestEarned,
            BigDecimal principalUnpaid,
            BigDecimal interestUnpaid,
            LineState state) {}

    /** Where an instalment stands on the business date. */
    enum LineState {
        PAID,
        PAST_DUE,
        OPEN
    }

    /**
     * A note on the business date: what is owed now ({@code outstanding}: principal, earned interest,
     * penalty), what of it is overdue, and what the schedule still asks for in all
     * ({@code remainingOnSchedule}: outstanding plus the projected interest not yet earned).
     */
    record NoteView(
            Note note,
            LocalDate businessDate,
            BigDecimal outstanding,
            BigDecimal overdue,
            BigDecimal remainingOnSchedule,
            List<ScheduleLine> schedule) {}

    /** The answer to a repayment; a duplicate of the same trade number gets the same one. */
    record Receipt(
            String flowId,
            String borrowNo,
            Channel channel,
            String outTradeNo,
            String kind,
            BigDecimal amount,
            BigDecimal penaltyPart,
            BigDecimal interestPart,
            BigDecimal principalPart,
            BigDecimal balanceAfter,
            String status) {}

    /** Whether what is owed equals principal plus charges minus accepted repayments. */
    record Conservation(
            String borrowNo,
            BigDecimal principal,
            BigDecimal charges,
            BigDecimal acceptedRepayments,
            BigDecimal expectedOutstanding,
            BigDecimal outstanding,
            long acceptedFlows,
            boolean holds) {}
}
