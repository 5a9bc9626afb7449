package dev.leasehold.examples.loan;

import dev.leasehold.examples.loan.Domain.Channel;
import dev.leasehold.examples.loan.Domain.Note;
import dev.leasehold.examples.loan.Domain.NoteStatus;
import dev.leasehold.examples.loan.Domain.NoteView;
import dev.leasehold.examples.loan.Domain.Receipt;
import dev.leasehold.examples.loan.Domain.ScheduleLine;
import dev.leasehold.spring.Locked;
import java.math.BigDecimal;
import java.math.RoundingMode;
import java.time.Duration;
import java.time.LocalDate;
import java.util.ArrayList;
import java.util.List;
import org.springframework.beans.factory.annotation.Value;
import org.springframework.dao.DuplicateKeyException;
import org.springframework.stereotype.Service;
import org.springframework.transaction.annotation.Transactional;

/**
 * The loan-note operations. Each one locks {@code borrow:{tenant}:{borrowNo}} before its transaction
 * begins and releases it after commit (S2.5); inside, the database safety net is always on (S2.6):
 * the repayment flow's unique key claims the trade number, and the note changes only by a CAS on
 * its status and version. With the lock bypassed (S2.14) the safety net alone still prevents double
 * debits and lost updates; callers then see conflicts instead of waiting.
 */
@Service
public class LoanService {

    static final String BUSY = "loan note {id} is being processed, retry later";
    private static final BigDecimal DAILY_PENALTY_RATE = new BigDecimal("0.0005");

    private final LoanRepository repository;
    private final ConcurrencyProbe probe;
    private final Duration criticalSectionDelay;

    LoanService(
            LoanRepository repository,
            ConcurrencyProbe probe,
            @Value("${loan.critical-section-delay:0ms}") Duration criticalSectionDelay) {
        this.repository = repository;
        this.probe = probe;
        this.criticalSectionDelay = criticalSectionDelay;
    }

    /** The result of a repayment: the receipt, and whether it was a duplicate of an accepted one. */
    public record Repayment(Receipt receipt, boolean duplicate) {}

    // ---------------------------------------------------------------- reads

    @Transactional(readOnly = true)
    public NoteView view(String tenant, String borrowNo) {
        Note note = load(tenant, borrowNo);
        return new NoteView(note, Money.of(note.outstanding()), repository.schedule(tenant, borrowNo));
    }

    @Transactional(readOnly = true)
    public List<Note> notes(String tenant) {
        return repository.notes(tenant);
    }

    @Transactional(readOnly = true)
    public List<Receipt> flows(String tenant, String borrowNo) {
        load(tenant, borrowNo);
        return repository.flows(tenant, borrowNo);
    }

    @Transactional(readOnly = true)
    public Domain.Conservation conservation(String tenant, String borrowNo) {
        return repository.conservation(tenant, borrowNo);
    }

    /** The accepted receipt of a trade number, for a duplicate that lost the race on the unique key. */
    @Transactional(readOnly = true)
    public Repayment duplicateOf(String tenant, String borrowNo, Channel channel, String outTradeNo) {
        return new Repayment(
                repository
                        .flow(tenant, borrowNo, channel, outTradeNo)
                        .orElseThrow(() ->
                                new IllegalStateException("duplicate key on " + outTradeNo + " but no flow found")),
                true);
    }

    private Note load(String tenant, String borrowNo) {
        return repository.find(tenant, borrowNo).orElseThrow(() -> new LoanProblems.NoteNotFound(tenant, borrowNo));
    }

    // ---------------------------------------------------------------- repayments

    /**
     * Repays part of a note. A trade number already accepted gets its original receipt back; a new
     * one is allocated to penalty, then interest, then principal.
     *
     * @throws DuplicateKeyException if a concurrent duplicate won the unique key first (bypass mode);
     *     the caller answers with {@link #duplicateOf}
     */
    @Locked(
            namespace = "borrow",
            tenant = "#tenant",
            key = "#borrowNo",
            waitFor = "3s",
            leaseFor = "5s",
            busyMessage = BUSY)
    @Transactional
    public Repayment repay(String tenant, String borrowNo, Channel channel, String outTradeNo, BigDecimal amount) {
        return pay(tenant, borrowNo, channel, outTradeNo, Money.of(amount), "REPAYMENT");
    }

    /** Pays off everything still owed (early settlement). */
    @Locked(
            namespace = "borrow",
            tenant = "#tenant",
            key = "#borrowNo",
            waitFor = "3s",
            leaseFor = "5s",
            busyMessage = BUSY)
    @Transactional
    public Repayment settle(String tenant, String borrowNo, Channel channel, String outTradeNo) {
        return pay(tenant, borrowNo, channel, outTradeNo, null, "SETTLEMENT");
    }

    /**
     * Settles several notes of one customer at once: their locks are taken in sorted order, all or
     * nothing (S2.8), and all settle in one transaction.
     */
    @Locked(
            namespace = "borrow",
            tenant = "#tenant",
            key = "#borrowNos",
            waitFor = "10s",
            leaseFor = "10s",
            busyMessage = BUSY)
    @Transactional
    public List<Repayment> settleAll(
            String tenant, String customerId, List<String> borrowNos, Channel channel, String outTradeNo) {
        List<Repayment> receipts = new ArrayList<>();
        for (String borrowNo : borrowNos.stream().distinct().sorted().toList()) {
            Note note = load(tenant, borrowNo);
            if (!note.customerId().equals(customerId)) {
                throw new LoanProblems.Refused(
                        422,
                        "other-customer",
                        "loan note " + borrowNo + " does not belong to customer " + customerId
                                + "; nothing was settled");
            }
            receipts.add(pay(tenant, borrowNo, channel, outTradeNo + ":" + borrowNo, null, "SETTLEMENT"));
        }
        return receipts;
    }

    /** Pays {@code requested}, or everything owed when it is null (settlement). */
    private Repayment pay(
            String tenant, String borrowNo, Channel channel, String outTradeNo, BigDecimal requested, String kind) {
        probe.enter(tenant, borrowNo);
        try {
            var existing = repository.flow(tenant, borrowNo, channel, outTradeNo);
            if (existing.isPresent()) {
                return new Repayment(existing.get(), true);
            }
            Note note = load(tenant, borrowNo);
            if (!note.status().acceptsRepayments()) {
                throw new LoanProblems.Refused(
                        409,
                        "note-closed",
                        "loan note " + borrowNo + " is " + note.status() + " and accepts no repayments");
            }
            BigDecimal amount = requested != null ? requested : Money.of(note.outstanding());
            if (amount.signum() <= 0) {
                throw new LoanProblems.Refused(400, "invalid-request", "amount: must be greater than 0");
            }
            if (amount.compareTo(note.outstanding()) > 0) {
                throw new LoanProblems.Refused(
                        400,
                        "invalid-request",
                        "amount: " + amount + " exceeds the outstanding " + Money.of(note.outstanding())
                                + " of loan note " + borrowNo);
            }
            pause();
            BigDecimal left = amount;
            BigDecimal penalty = left.min(note.penaltyOutstanding());
            left = left.subtract(penalty);
            BigDecimal interest = left.min(note.interestOutstanding());
            left = left.subtract(interest);
            BigDecimal principal = left;
            Note after = new Note(
                    note.tenantId(),
                    borrowNo,
                    note.customerId(),
                    note.principal(),
                    Money.of(note.principalOutstanding().subtract(principal)),
                    Money.of(note.interestOutstanding().subtract(interest)),
                    Money.of(note.penaltyOutstanding().subtract(penalty)),
                    note.annualRate(),
                    note.termMonths(),
                    note.startDate(),
                    null,
                    note.version());
            NoteStatus status = after.outstanding().signum() == 0
                    ? NoteStatus.SETTLED
                    : note.status() == NoteStatus.OVERDUE ? NoteStatus.OVERDUE : NoteStatus.PARTIALLY_REPAID;
            after = withStatus(after, status);
            Receipt receipt = new Receipt(
                    LoanRepository.newId(),
                    borrowNo,
                    channel,
                    outTradeNo,
                    amount,
                    Money.of(penalty),
                    Money.of(interest),
                    Money.of(principal),
                    Money.of(after.outstanding()),
                    "ACCEPTED");
            repository.insertFlow(tenant, kind, receipt); // claims the trade number (unique key)
            if (!repository.compareAndSet(note, after)) {
                throw new LoanProblems.ConcurrentChange(borrowNo); // rolls the flow back too
            }
            return new Repayment(receipt, false);
        } finally {
            probe.exit(tenant, borrowNo);
        }
    }

    /** Reverses an accepted repayment: what it paid is owed again. */
    @Locked(namespace = "borrow", tenant = "#tenant", key = "#borrowNo", waitFor = "3s", busyMessage = BUSY)
    @Transactional
    public Note reverse(String tenant, String borrowNo, String flowId, String reason) {
        Note note = load(tenant, borrowNo);
        Receipt flow = repository
                .flowById(tenant, borrowNo, flowId)
                .orElseThrow(() -> new LoanProblems.Refused(
                        404, "flow-not-found", "repayment " + flowId + " does not exist on loan note " + borrowNo));
        if (note.status() == NoteStatus.WRITTEN_OFF) {
            throw new LoanProblems.Refused(409, "note-closed", "loan note " + borrowNo + " is written off");
        }
        if (!repository.reverseFlow(tenant, borrowNo, flowId)) {
            throw new LoanProblems.Refused(409, "already-reversed", "repayment " + flowId + " is already reversed");
        }
        Note after = new Note(
                note.tenantId(),
                borrowNo,
                note.customerId(),
                note.principal(),
                Money.of(note.principalOutstanding().add(flow.principalPart())),
                Money.of(note.interestOutstanding().add(flow.interestPart())),
                Money.of(note.penaltyOutstanding().add(flow.penaltyPart())),
                note.annualRate(),
                note.termMonths(),
                note.startDate(),
                null,
                note.version());
        NoteStatus status = note.status() == NoteStatus.OVERDUE
                ? NoteStatus.OVERDUE
                : repository.acceptedFlows(tenant, borrowNo) == 0 ? NoteStatus.NORMAL : NoteStatus.PARTIALLY_REPAID;
        after = withStatus(after, status);
        if (!repository.compareAndSet(note, after)) {
            throw new LoanProblems.ConcurrentChange(borrowNo);
        }
        return after;
    }

    /** An operator waives interest (penalty first, then interest); recorded as a negative charge. */
    @Locked(namespace = "borrow", tenant = "#tenant", key = "#borrowNo", waitFor = "3s", busyMessage = BUSY)
    @Transactional
    public Note waive(String tenant, String borrowNo, BigDecimal amount, String operator, String reason) {
        Note note = load(tenant, borrowNo);
        BigDecimal waivable = note.penaltyOutstanding().add(note.interestOutstanding());
        BigDecimal value = Money.of(amount);
        if (value.compareTo(waivable) > 0) {
            throw new LoanProblems.Refused(
                    400,
                    "invalid-request",
                    "amount: " + value + " exceeds the waivable interest and penalty " + Money.of(waivable));
        }
        if (!note.status().acceptsRepayments()) {
            throw new LoanProblems.Refused(409, "note-closed", "loan note " + borrowNo + " is " + note.status());
        }
        BigDecimal penalty = value.min(note.penaltyOutstanding());
        BigDecimal interest = value.subtract(penalty);
        repository.insertCharge(
                tenant,
                borrowNo,
                "WAIVER",
                "WAIVER:" + LoanRepository.newId(),
                value.negate(),
                "by " + operator + ": " + reason);
        Note after = new Note(
                note.tenantId(),
                borrowNo,
                note.customerId(),
                note.principal(),
                note.principalOutstanding(),
                Money.of(note.interestOutstanding().subtract(interest)),
                Money.of(note.penaltyOutstanding().subtract(penalty)),
                note.annualRate(),
                note.termMonths(),
                note.startDate(),
                null,
                note.version());
        after = withStatus(after, after.outstanding().signum() == 0 ? NoteStatus.SETTLED : note.status());
        if (!repository.compareAndSet(note, after)) {
            throw new LoanProblems.ConcurrentChange(borrowNo);
        }
        return after;
    }

    /** Extends the term: a new schedule for the remaining principal, and the interest it adds. */
    @Locked(namespace = "borrow", tenant = "#tenant", key = "#borrowNo", waitFor = "3s", busyMessage = BUSY)
    @Transactional
    public NoteView extend(String tenant, String borrowNo, int extraMonths) {
        Note note = load(tenant, borrowNo);
        if (!note.status().acceptsRepayments()) {
            throw new LoanProblems.Refused(409, "note-closed", "loan note " + borrowNo + " is " + note.status());
        }
        int term = note.termMonths() + extraMonths;
        List<ScheduleLine> schedule = schedule(note.principalOutstanding(), note.annualRate(), term, note.startDate());
        BigDecimal newInterest =
                schedule.stream().map(ScheduleLine::interestDue).reduce(Money.ZERO, BigDecimal::add);
        BigDecimal delta =
                Money.of(newInterest.subtract(note.interestOutstanding()).max(BigDecimal.ZERO));
        if (delta.signum() > 0) {
            repository.insertCharge(
                    tenant,
                    borrowNo,
                    "INTEREST",
                    "EXTENSION:" + note.version(),
                    delta,
                    "extension by " + extraMonths + " months");
        }
        Note after = new Note(
                note.tenantId(),
                borrowNo,
                note.customerId(),
                note.principal(),
                note.principalOutstanding(),
                Money.of(note.interestOutstanding().add(delta)),
                note.penaltyOutstanding(),
                note.annualRate(),
                term,
                note.startDate(),
                note.status(),
                note.version());
        if (!repository.compareAndSet(note, after)) {
            throw new LoanProblems.ConcurrentChange(borrowNo);
        }
        repository.replaceSchedule(tenant, borrowNo, schedule);
        return new NoteView(after, Money.of(after.outstanding()), schedule);
    }

    /**
     * The overdue job's step for one note (S2.10's background caller): when the note is behind its
     * schedule on {@code asOf}, one penalty per day (unique charge key) and status OVERDUE. Busy
     * notes are retried later from the durable retry table, never skipped.
     */
    @Locked(
            namespace = "borrow",
            tenant = "#tenant",
            key = "#borrowNo",
            waitFor = "1s",
            onBusy = Locked.OnBusy.RETRY_LATER)
    @Transactional
    public void accruePenalty(String tenant, String borrowNo, LocalDate asOf) {
        Note note = load(tenant, borrowNo);
        if (!note.status().acceptsRepayments() || note.outstanding().signum() == 0) {
            return;
        }
        BigDecimal scheduledPrincipal = repository.schedule(tenant, borrowNo).stream()
                .filter(line -> line.dueDate().isBefore(asOf))
                .map(ScheduleLine::principalDue)
                .reduce(Money.ZERO, BigDecimal::add);
        BigDecimal repaidPrincipal = note.principal().subtract(note.principalOutstanding());
        if (repaidPrincipal.compareTo(scheduledPrincipal) >= 0) {
            return;
        }
        String key = "PENALTY:" + asOf;
        if (repository.chargeExists(tenant, borrowNo, key)) {
            return;
        }
        BigDecimal penalty = Money.of(
                note.principalOutstanding().multiply(DAILY_PENALTY_RATE).max(new BigDecimal("0.01")));
        probe.enter(tenant, borrowNo);
        try {
            pause();
            repository.insertCharge(tenant, borrowNo, "PENALTY", key, penalty, "overdue on " + asOf);
            Note after = new Note(
                    note.tenantId(),
                    borrowNo,
                    note.customerId(),
                    note.principal(),
                    note.principalOutstanding(),
                    note.interestOutstanding(),
                    Money.of(note.penaltyOutstanding().add(penalty)),
                    note.annualRate(),
                    note.termMonths(),
                    note.startDate(),
                    NoteStatus.OVERDUE,
                    note.version());
            if (!repository.compareAndSet(note, after)) {
                throw new LoanProblems.ConcurrentChange(borrowNo);
            }
        } finally {
            probe.exit(tenant, borrowNo);
        }
    }

    // ---------------------------------------------------------------- creation

    /** Opens a note with an equal-principal monthly schedule; its interest is owed from the start. */
    @Transactional
    public Note open(
            String tenant,
            String borrowNo,
            String customerId,
            BigDecimal principal,
            BigDecimal annualRate,
            int termMonths,
            LocalDate start) {
        List<ScheduleLine> schedule = schedule(Money.of(principal), annualRate, termMonths, start);
        BigDecimal interest = schedule.stream().map(ScheduleLine::interestDue).reduce(Money.ZERO, BigDecimal::add);
        Note note = new Note(
                tenant,
                borrowNo,
                customerId,
                Money.of(principal),
                Money.of(principal),
                Money.of(interest),
                Money.ZERO,
                annualRate,
                termMonths,
                start,
                NoteStatus.NORMAL,
                0);
        repository.insertNote(note);
        repository.replaceSchedule(tenant, borrowNo, schedule);
        repository.insertCharge(
                tenant, borrowNo, "INTEREST", "INTEREST:OPEN", Money.of(interest), "interest over the term");
        return note;
    }

    static List<ScheduleLine> schedule(BigDecimal principal, BigDecimal annualRate, int term, LocalDate start) {
        List<ScheduleLine> lines = new ArrayList<>();
        BigDecimal monthlyRate = annualRate.divide(BigDecimal.valueOf(12), 10, RoundingMode.HALF_EVEN);
        BigDecimal each = principal.divide(BigDecimal.valueOf(term), 2, RoundingMode.DOWN);
        BigDecimal remaining = principal;
        for (int period = 1; period <= term; period++) {
            BigDecimal due = period == term ? remaining : each;
            lines.add(new ScheduleLine(
                    period, start.plusMonths(period), Money.of(due), Money.of(remaining.multiply(monthlyRate))));
            remaining = remaining.subtract(due);
        }
        return lines;
    }

    private static Note withStatus(Note n, NoteStatus status) {
        return new Note(
                n.tenantId(),
                n.borrowNo(),
                n.customerId(),
                n.principal(),
                n.principalOutstanding(),
                n.interestOutstanding(),
                n.penaltyOutstanding(),
                n.annualRate(),
                n.termMonths(),
                n.startDate(),
                status,
                n.version());
    }

    private void pause() {
        if (!criticalSectionDelay.isZero()) {
            try {
                Thread.sleep(criticalSectionDelay.toMillis());
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
    }
}
