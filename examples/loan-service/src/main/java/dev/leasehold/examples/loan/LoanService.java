package dev.leasehold.examples.loan;

import dev.leasehold.examples.loan.Domain.Channel;
import dev.leasehold.examples.loan.Domain.LineState;
import dev.leasehold.examples.loan.Domain.Note;
import dev.leasehold.examples.loan.Domain.NoteStatus;
import dev.leasehold.examples.loan.Domain.NoteView;
import dev.leasehold.examples.loan.Domain.Receipt;
import dev.leasehold.examples.loan.Domain.ScheduleLine;
import dev.leasehold.spring.lock.Locked;
import java.math.BigDecimal;
import java.time.LocalDate;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.function.Supplier;
import org.springframework.dao.DuplicateKeyException;
import org.springframework.stereotype.Service;
import org.springframework.transaction.annotation.Transactional;
import tools.jackson.databind.json.JsonMapper;

/**
 * The loan-note operations, following the README's money rules ({@link NoteLedger}). Each one locks
 * {@code borrow:{tenant}:{borrowNo}} before its transaction begins and releases it after commit
 * (S2.5); inside, the database safety net is always on (S2.6): the repayment flow's unique key
 * claims the trade number, an operator command's record claims its Idempotency-Key, and the note
 * changes only by a CAS on its status and version. With the lock bypassed (S2.14) the safety net
 * alone still prevents double debits and lost updates; callers then see conflicts instead of waiting.
 */
@Service
public class LoanService {

    static final String BUSY = "loan note {id} is being processed, retry later";

    private final LoanRepository repository;
    private final ConcurrencyProbe probe;
    private final BusinessCalendar calendar;
    private final JsonMapper json;

    LoanService(LoanRepository repository, ConcurrencyProbe probe, BusinessCalendar calendar, JsonMapper json) {
        this.repository = repository;
        this.probe = probe;
        this.calendar = calendar;
        this.json = json;
    }

    /** The result of a repayment: the receipt, and whether it was a duplicate of an accepted one. */
    public record Repayment(Receipt receipt, boolean duplicate) {}

    /** A reversed repayment and the note afterwards. */
    public record Reversal(Receipt reversed, NoteView note) {}

    // ---------------------------------------------------------------- reads

    @Transactional(readOnly = true)
    public NoteView view(String tenant, String borrowNo) {
        Note note = load(tenant, borrowNo);
        return view(note, ledger(note), calendar.today());
    }

    /** Whether the note exists: checked before anything is locked, so unknown notes leave no lock state. */
    @Transactional(readOnly = true)
    public void requireExists(String tenant, String borrowNo) {
        if (!repository.exists(tenant, borrowNo)) {
            throw new LoanProblems.NoteNotFound(tenant, borrowNo);
        }
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

    /** The answer for a trade number that lost the race on the unique key (bypass mode). */
    @Transactional(readOnly = true)
    public Repayment duplicateOf(
            String tenant, String borrowNo, Channel channel, String outTradeNo, String kind, BigDecimal amount) {
        return repository
                .flow(tenant, borrowNo, channel, outTradeNo)
                .map(flow -> sameTrade(flow, kind, amount))
                .orElseThrow(() -> new LoanProblems.ConcurrentChange(borrowNo));
    }

    /** The recorded answer of an operator command that lost the race on its key (bypass mode). */
    @Transactional(readOnly = true)
    public <T> T replayOf(String tenant, String key, String command, String fingerprint, Class<T> type) {
        return repository
                .command(tenant, key)
                .map(record -> replay(record, key, command, fingerprint, type))
                .orElseThrow(() -> new LoanProblems.Refused(
                        409, "request-in-progress", "request " + key + " is still in progress; retry later"));
    }

    private Note load(String tenant, String borrowNo) {
        return repository.find(tenant, borrowNo).orElseThrow(() -> new LoanProblems.NoteNotFound(tenant, borrowNo));
    }

    private NoteLedger ledger(Note note) {
        return new NoteLedger(
                note.principal(),
                note.annualRate(),
                note.startDate(),
                new ArrayList<>(repository.lines(note.tenantId(), note.borrowNo())),
                note.principalOutstanding(),
                note.interestOutstanding(),
                note.penaltyOutstanding());
    }

    // ---------------------------------------------------------------- repayments

    /**
     * Repays part of a note. A trade number already accepted with the same amount gets its original
     * receipt back; with another amount, or once reversed, it is refused.
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
        return pay(tenant, borrowNo, channel, outTradeNo, Money.of(amount), Kind.REPAYMENT);
    }

    /** Pays off everything owed on the business date (early settlement at the interest earned to date). */
    @Locked(
            namespace = "borrow",
            tenant = "#tenant",
            key = "#borrowNo",
            waitFor = "3s",
            leaseFor = "5s",
            busyMessage = BUSY)
    @Transactional
    public Repayment settle(String tenant, String borrowNo, Channel channel, String outTradeNo) {
        return pay(tenant, borrowNo, channel, outTradeNo, null, Kind.SETTLEMENT);
    }

    /**
     * Settles several notes of one customer at once: their locks are taken in sorted order, all or
     * nothing (S2.8), and all settle in one transaction. Each note's flow carries the batch's trade
     * number, so a retried batch gets every receipt back.
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
        List<String> sorted = borrowNos.stream().distinct().sorted().toList();
        for (String borrowNo : sorted) {
            if (!load(tenant, borrowNo).customerId().equals(customerId)) {
                throw new LoanProblems.Refused(
                        422,
                        "other-customer",
                        "loan note " + borrowNo + " does not belong to customer " + customerId
                                + "; nothing was settled");
            }
        }
        List<Repayment> receipts = new ArrayList<>();
        for (String borrowNo : sorted) {
            receipts.add(pay(tenant, borrowNo, channel, outTradeNo, null, Kind.SETTLEMENT));
        }
        return receipts;
    }

    enum Kind {
        REPAYMENT,
        SETTLEMENT
    }

    /** Pays {@code requested}, or everything owed when it is null (settlement). */
    private Repayment pay(
            String tenant, String borrowNo, Channel channel, String outTradeNo, BigDecimal requested, Kind kind) {
        probe.enter(tenant, borrowNo);
        try {
            Optional<Receipt> existing = repository.flow(tenant, borrowNo, channel, outTradeNo);
            if (existing.isPresent()) {
                return sameTrade(existing.get(), kind.name(), requested);
            }
            Note note = load(tenant, borrowNo);
            requireOpen(note);
            LocalDate today = calendar.today();
            NoteLedger ledger = ledger(note);
            List<NoteLedger.Earned> earned = ledger.accrue(today);
            BigDecimal owed = Money.of(ledger.outstanding());
            BigDecimal amount = requested != null ? requested : owed;
            if (amount.signum() <= 0) {
                throw new LoanProblems.Refused(409, "nothing-owed", "loan note " + borrowNo + " owes nothing");
            }
            if (amount.compareTo(owed) > 0) {
                throw new LoanProblems.Refused(
                        422,
                        "amount-exceeds-outstanding",
                        "amount: " + amount + " exceeds the outstanding " + owed + " of loan note " + borrowNo);
            }
            probe.pause();
            NoteLedger.Parts parts = ledger.pay(amount, today);
            NoteStatus status = status(ledger, today, true);
            Receipt receipt = new Receipt(
                    LoanRepository.newId(),
                    borrowNo,
                    channel,
                    outTradeNo,
                    kind.name(),
                    amount,
                    parts.penalty(),
                    parts.interest(),
                    parts.principal(),
                    Money.of(ledger.outstanding()),
                    "ACCEPTED");
            repository.insertFlow(tenant, receipt); // claims the trade number (unique key)
            write(note, ledger, earned, status);
            return new Repayment(receipt, false);
        } finally {
            probe.exit(tenant, borrowNo);
        }
    }

    /** A trade number seen before: the same request replays, anything else is refused. */
    private static Repayment sameTrade(Receipt flow, String kind, BigDecimal amount) {
        boolean same =
                flow.kind().equals(kind) && (amount == null || flow.amount().compareTo(amount) == 0);
        if (!same) {
            throw new LoanProblems.Refused(
                    422,
                    "trade-number-reused",
                    "trade number " + flow.outTradeNo() + " was already used for a "
                            + flow.kind().toLowerCase() + " of " + flow.amount()
                            + "; a new payment needs a new trade number");
        }
        if (!"ACCEPTED".equals(flow.status())) {
            throw new LoanProblems.Refused(
                    409,
                    "repayment-reversed",
                    "the repayment with trade number " + flow.outTradeNo() + " was reversed; it is not accepted"
                            + " again: a new payment needs a new trade number");
        }
        return new Repayment(flow, true);
    }

    // ---------------------------------------------------------------- operator commands

    /** An operator command's Idempotency-Key and the parameters it must come back with. */
    public record Command(String key, String name, String fingerprint) {}

    /** Reverses an accepted repayment: exactly what it paid is owed again. */
    @Locked(namespace = "borrow", tenant = "#tenant", key = "#borrowNo", waitFor = "3s", busyMessage = BUSY)
    @Transactional
    public Reversal reverse(String tenant, String borrowNo, String flowId, String reason, Command command) {
        return once(tenant, command, Reversal.class, () -> {
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
            LocalDate today = calendar.today();
            NoteLedger ledger = ledger(note);
            List<NoteLedger.Earned> earned = note.status().acceptsRepayments() ? ledger.accrue(today) : List.of();
            ledger.unpay(new NoteLedger.Parts(flow.penaltyPart(), flow.interestPart(), flow.principalPart()));
            NoteStatus status = status(ledger, today, repository.acceptedFlows(tenant, borrowNo) > 0);
            Note after = write(note, ledger, earned, status);
            Receipt reversed = repository.flowById(tenant, borrowNo, flowId).orElseThrow();
            return new Reversal(reversed, view(after, ledger, today));
        });
    }

    /** An operator waives penalty first, then earned interest; recorded as a negative charge. */
    @Locked(namespace = "borrow", tenant = "#tenant", key = "#borrowNo", waitFor = "3s", busyMessage = BUSY)
    @Transactional
    public NoteView waive(
            String tenant, String borrowNo, BigDecimal amount, String operator, String reason, Command command) {
        return once(tenant, command, NoteView.class, () -> {
            Note note = load(tenant, borrowNo);
            requireOpen(note);
            LocalDate today = calendar.today();
            NoteLedger ledger = ledger(note);
            List<NoteLedger.Earned> earned = ledger.accrue(today);
            BigDecimal value = Money.of(amount);
            BigDecimal waivable = Money.of(ledger.waivable());
            if (value.compareTo(waivable) > 0) {
                throw new LoanProblems.Refused(
                        422,
                        "amount-exceeds-waivable",
                        "amount: " + value + " exceeds the waivable interest and penalty " + waivable
                                + " (principal and interest not yet earned cannot be waived)");
            }
            ledger.waive(value);
            repository.insertCharge(
                    tenant,
                    borrowNo,
                    "WAIVER",
                    "WAIVER:" + LoanRepository.newId(),
                    value.negate(),
                    Money.clip("by " + operator + ": " + reason, 200));
            NoteStatus status = status(ledger, today, repository.acceptedFlows(tenant, borrowNo) > 0);
            return view(write(note, ledger, earned, status), ledger, today);
        });
    }

    /**
     * Extends the term of a borrower who is current: the unpaid principal is re-scheduled over the
     * current instalment, the later ones and {@code extraMonths} new ones. Nothing is charged: the
     * new instalments earn their interest when their periods begin.
     */
    @Locked(namespace = "borrow", tenant = "#tenant", key = "#borrowNo", waitFor = "3s", busyMessage = BUSY)
    @Transactional
    public NoteView extend(String tenant, String borrowNo, int extraMonths, Command command) {
        return once(tenant, command, NoteView.class, () -> {
            Note note = load(tenant, borrowNo);
            requireOpen(note);
            LocalDate today = calendar.today();
            NoteLedger ledger = ledger(note);
            List<NoteLedger.Earned> earned = ledger.accrue(today);
            if (ledger.overdueAmount(today).signum() > 0 || ledger.current(today) >= ledger.lines.size()) {
                throw new LoanProblems.Refused(
                        409,
                        "note-overdue",
                        "loan note " + borrowNo + " has instalments past due ("
                                + Money.of(ledger.overdueAmount(today))
                                + " overdue); an extension needs the borrower current");
            }
            if (ledger.principalOutstanding.signum() == 0) {
                throw new LoanProblems.Refused(
                        409, "nothing-to-extend", "loan note " + borrowNo + " has no principal left to re-schedule");
            }
            ledger.extend(extraMonths, today);
            bookInterest(tenant, borrowNo, earned);
            Note after = cas(note, ledger, status(ledger, today, repository.acceptedFlows(tenant, borrowNo) > 0));
            repository.replaceSchedule(tenant, borrowNo, ledger.lines);
            return view(after, ledger, today);
        });
    }

    /**
     * Writes a note off: what is still owed is recorded as a WRITE_OFF charge (negative), the note
     * owes nothing and takes no more repayments, interest or penalty.
     */
    @Locked(namespace = "borrow", tenant = "#tenant", key = "#borrowNo", waitFor = "3s", busyMessage = BUSY)
    @Transactional
    public NoteView writeOff(String tenant, String borrowNo, String operator, String reason, Command command) {
        return once(tenant, command, NoteView.class, () -> {
            Note note = load(tenant, borrowNo);
            requireOpen(note);
            LocalDate today = calendar.today();
            NoteLedger ledger = ledger(note);
            List<NoteLedger.Earned> earned = ledger.accrue(today);
            BigDecimal owed = Money.of(ledger.outstanding());
            repository.insertCharge(
                    tenant,
                    borrowNo,
                    "WRITE_OFF",
                    "WRITE_OFF",
                    owed.negate(),
                    Money.clip("by " + operator + ": " + reason, 200));
            ledger.principalOutstanding = Money.ZERO;
            ledger.interestOutstanding = Money.ZERO;
            ledger.penaltyOutstanding = Money.ZERO;
            return view(write(note, ledger, earned, NoteStatus.WRITTEN_OFF), ledger, today);
        });
    }

    /** Runs {@code work} once per Idempotency-Key; the same key again replays, with other parameters is refused. */
    private <T> T once(String tenant, Command command, Class<T> type, Supplier<T> work) {
        Optional<LoanRepository.CommandRecord> seen = repository.command(tenant, command.key());
        if (seen.isPresent()) {
            return replay(seen.get(), command.key(), command.name(), command.fingerprint(), type);
        }
        T result = work.get();
        repository.insertCommand(
                tenant, command.key(), command.name(), command.fingerprint(), json.writeValueAsString(result));
        return result;
    }

    private <T> T replay(
            LoanRepository.CommandRecord record, String key, String command, String fingerprint, Class<T> type) {
        if (!record.command().equals(command) || !record.fingerprint().equals(fingerprint)) {
            throw new LoanProblems.Refused(
                    422,
                    "idempotency-key-reused",
                    "Idempotency-Key " + key + " was already used for another request (" + record.command()
                            + "); use a new key for a new request");
        }
        LoanProblems.markReplayed();
        return json.readValue(record.responseBody(), type);
    }

    /**
     * The overdue run's step for one note (S2.10's background caller): on {@code asOf}, one penalty
     * (unique charge key per day) on what is overdue, and the status. Busy notes are retried later
     * from the durable retry table, never skipped.
     */
    @Locked(
            namespace = "borrow",
            tenant = "#tenant",
            key = "#borrowNo",
            waitFor = "1s",
            onBusy = Locked.OnBusy.RETRY_LATER,
            retryKey = "'overdue:' + #tenant + ':' + #borrowNo + ':' + #asOf")
    @Transactional
    public void accruePenalty(String tenant, String borrowNo, LocalDate asOf) {
        Note note = load(tenant, borrowNo);
        if (!note.status().acceptsRepayments()) {
            return;
        }
        probe.enter(tenant, borrowNo);
        try {
            LocalDate today = calendar.today();
            NoteLedger ledger = ledger(note);
            List<NoteLedger.Earned> earned = ledger.accrue(today);
            String key = "PENALTY:" + asOf;
            BigDecimal penalty = ledger.dailyPenalty(asOf);
            boolean charged = repository.chargeExists(tenant, borrowNo, key);
            probe.pause(); // between the look and the write, where an unlocked run would race
            if (penalty.signum() > 0 && !charged) {
                repository.insertCharge(tenant, borrowNo, "PENALTY", key, penalty, "overdue on " + asOf);
                ledger.penaltyOutstanding = ledger.penaltyOutstanding.add(penalty);
            }
            NoteStatus status = status(ledger, today, repository.acceptedFlows(tenant, borrowNo) > 0);
            if (!earned.isEmpty()
                    || status != note.status()
                    || ledger.penaltyOutstanding.compareTo(note.penaltyOutstanding()) != 0) {
                write(note, ledger, earned, status);
            }
        } finally {
            probe.exit(tenant, borrowNo);
        }
    }

    // ---------------------------------------------------------------- creation

    /** Opens a note with an equal-principal monthly schedule; the periods begun by today earn their interest. */
    @Transactional
    public Note open(
            String tenant,
            String borrowNo,
            String customerId,
            BigDecimal principal,
            BigDecimal annualRate,
            int termMonths,
            LocalDate start) {
        return open(tenant, borrowNo, customerId, principal, annualRate, termMonths, start, false);
    }

    /** Opens a note; a demo note also takes the demo storm. */
    @Transactional
    public Note open(
            String tenant,
            String borrowNo,
            String customerId,
            BigDecimal principal,
            BigDecimal annualRate,
            int termMonths,
            LocalDate start,
            boolean demo) {
        LocalDate today = calendar.today();
        if (start.isAfter(today)) {
            throw new IllegalArgumentException("a note cannot start after the business date " + today);
        }
        BigDecimal amount = Money.of(principal);
        NoteLedger ledger = new NoteLedger(
                amount,
                annualRate,
                start,
                NoteLedger.schedule(amount, termMonths, start),
                amount,
                Money.ZERO,
                Money.ZERO);
        List<NoteLedger.Earned> earned = ledger.accrue(today);
        Note note = new Note(
                tenant,
                borrowNo,
                customerId,
                amount,
                amount,
                Money.of(ledger.interestOutstanding),
                Money.ZERO,
                annualRate,
                termMonths,
                start,
                NoteStatus.NORMAL,
                0,
                demo);
        repository.insertNote(note);
        repository.replaceSchedule(tenant, borrowNo, ledger.lines);
        bookInterest(tenant, borrowNo, earned);
        NoteStatus status = status(ledger, today, false);
        return status == NoteStatus.NORMAL ? note : cas(note, ledger, status);
    }

    // ---------------------------------------------------------------- shared steps

    private static void requireOpen(Note note) {
        if (!note.status().acceptsRepayments()) {
            throw new LoanProblems.Refused(
                    409,
                    "note-closed",
                    "loan note " + note.borrowNo() + " is " + note.status() + " and accepts no repayments or changes");
        }
    }

    /** SETTLED when nothing is owed; OVERDUE while an instalment is past due and unpaid; else by repayments. */
    static NoteStatus status(NoteLedger ledger, LocalDate today, boolean anyAccepted) {
        if (ledger.outstanding().signum() == 0) {
            return NoteStatus.SETTLED;
        }
        if (ledger.overdueAmount(today).signum() > 0) {
            return NoteStatus.OVERDUE;
        }
        return anyAccepted ? NoteStatus.PARTIALLY_REPAID : NoteStatus.NORMAL;
    }

    /** Books earned interest, marks the lines, and CASes the note's balances and status. */
    private Note write(Note note, NoteLedger ledger, List<NoteLedger.Earned> earned, NoteStatus status) {
        bookInterest(note.tenantId(), note.borrowNo(), earned);
        for (NoteLedger.Earned e : earned) {
            repository.markEarned(note.tenantId(), note.borrowNo(), e.period(), e.amount());
        }
        return cas(note, ledger, status);
    }

    /** One INTEREST charge per period that began (its unique key makes a second one fail). */
    private void bookInterest(String tenant, String borrowNo, List<NoteLedger.Earned> earned) {
        for (NoteLedger.Earned e : earned) {
            repository.insertCharge(
                    tenant, borrowNo, "INTEREST", "INTEREST:" + e.period(), e.amount(), "period " + e.period());
        }
    }

    private Note cas(Note note, NoteLedger ledger, NoteStatus status) {
        Note after = new Note(
                note.tenantId(),
                note.borrowNo(),
                note.customerId(),
                note.principal(),
                Money.of(ledger.principalOutstanding),
                Money.of(ledger.interestOutstanding),
                Money.of(ledger.penaltyOutstanding),
                note.annualRate(),
                ledger.lines.size(),
                note.startDate(),
                status,
                note.version() + 1,
                note.demo());
        if (!repository.compareAndSet(note, after)) {
            throw new LoanProblems.ConcurrentChange(note.borrowNo()); // rolls everything back
        }
        return after;
    }

    private static NoteView view(Note note, NoteLedger ledger, LocalDate today) {
        List<ScheduleLine> lines = new ArrayList<>();
        BigDecimal projected = Money.ZERO;
        for (int i = 0; i < ledger.lines.size(); i++) {
            NoteLedger.Line line = ledger.lines.get(i);
            BigDecimal interest = ledger.projectedInterest(i);
            if (!line.earned()) {
                projected = projected.add(interest);
            }
            BigDecimal principalUnpaid = ledger.principalUnpaid(i);
            BigDecimal interestUnpaid = line.earned() ? ledger.interestUnpaid(i) : interest;
            LineState state = principalUnpaid.signum() == 0 && interestUnpaid.signum() == 0
                    ? LineState.PAID
                    : line.dueDate.isBefore(today) ? LineState.PAST_DUE : LineState.OPEN;
            if (note.status() == NoteStatus.WRITTEN_OFF || note.status() == NoteStatus.SETTLED) {
                interestUnpaid = line.earned() ? interestUnpaid : Money.ZERO;
                state = note.status() == NoteStatus.SETTLED ? LineState.PAID : state;
            }
            lines.add(new ScheduleLine(
                    line.period,
                    line.dueDate,
                    line.principalDue,
                    interest,
                    line.earned(),
                    principalUnpaid,
                    interestUnpaid,
                    state));
        }
        boolean open = note.status().acceptsRepayments();
        BigDecimal outstanding = Money.of(ledger.outstanding());
        return new NoteView(
                note,
                today,
                outstanding,
                open ? Money.of(ledger.overdueAmount(today)) : Money.ZERO,
                open ? Money.of(outstanding.add(projected)) : outstanding,
                lines);
    }
}
