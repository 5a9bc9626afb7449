package dev.leasehold.examples.loan;

import dev.leasehold.examples.loan.Domain.Channel;
import dev.leasehold.examples.loan.Domain.Conservation;
import dev.leasehold.examples.loan.Domain.Note;
import dev.leasehold.examples.loan.Domain.NoteStatus;
import dev.leasehold.examples.loan.Domain.Receipt;
import java.math.BigDecimal;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Timestamp;
import java.time.Instant;
import java.util.List;
import java.util.Optional;
import java.util.UUID;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.stereotype.Repository;

/** Plain SQL over the credit core's tables; every change of a note is a CAS on (status, version) (S2.6). */
@Repository
class LoanRepository {

    private final JdbcTemplate jdbc;

    LoanRepository(JdbcTemplate jdbc) {
        this.jdbc = jdbc;
    }

    static String newId() {
        return UUID.randomUUID().toString().replace("-", "");
    }

    private static Note note(ResultSet rs, int row) throws SQLException {
        return new Note(
                rs.getString("tenant_id"),
                rs.getString("borrow_no"),
                rs.getString("customer_id"),
                rs.getBigDecimal("principal"),
                rs.getBigDecimal("principal_outstanding"),
                rs.getBigDecimal("interest_outstanding"),
                rs.getBigDecimal("penalty_outstanding"),
                rs.getBigDecimal("annual_rate"),
                rs.getInt("term_months"),
                rs.getDate("start_date").toLocalDate(),
                NoteStatus.valueOf(rs.getString("status")),
                rs.getLong("version"),
                rs.getBoolean("demo"));
    }

    boolean exists(String tenant, String borrowNo) {
        return jdbc.queryForObject(
                        "SELECT COUNT(*) FROM loan_note WHERE tenant_id = ? AND borrow_no = ?",
                        Integer.class,
                        tenant,
                        borrowNo)
                > 0;
    }

    Optional<Note> find(String tenant, String borrowNo) {
        return jdbc
                .query(
                        "SELECT * FROM loan_note WHERE tenant_id = ? AND borrow_no = ?",
                        LoanRepository::note,
                        tenant,
                        borrowNo)
                .stream()
                .findFirst();
    }

    List<Note> notes(String tenant) {
        return jdbc.query(
                "SELECT * FROM loan_note WHERE tenant_id = ? ORDER BY borrow_no", LoanRepository::note, tenant);
    }

    List<Note> allOpenNotes() {
        return jdbc.query(
                "SELECT * FROM loan_note WHERE status IN ('NORMAL', 'PARTIALLY_REPAID', 'OVERDUE') ORDER BY tenant_id, borrow_no",
                LoanRepository::note);
    }

    /** The schedule as ledger lines: a line's interest is null until earned. */
    List<NoteLedger.Line> lines(String tenant, String borrowNo) {
        return jdbc.query(
                "SELECT period, due_date, principal_due, interest_due, interest_earned FROM repayment_schedule"
                        + " WHERE tenant_id = ? AND borrow_no = ? ORDER BY period",
                (rs, i) -> new NoteLedger.Line(
                        rs.getInt(1),
                        rs.getDate(2).toLocalDate(),
                        rs.getBigDecimal(3),
                        rs.getBoolean(5) ? rs.getBigDecimal(4) : null),
                tenant,
                borrowNo);
    }

    void replaceSchedule(String tenant, String borrowNo, List<NoteLedger.Line> lines) {
        jdbc.update("DELETE FROM repayment_schedule WHERE tenant_id = ? AND borrow_no = ?", tenant, borrowNo);
        for (NoteLedger.Line line : lines) {
            jdbc.update(
                    "INSERT INTO repayment_schedule (tenant_id, borrow_no, period, due_date, principal_due, interest_due,"
                            + " interest_earned) VALUES (?, ?, ?, ?, ?, ?, ?)",
                    tenant,
                    borrowNo,
                    line.period,
                    java.sql.Date.valueOf(line.dueDate),
                    line.principalDue,
                    line.earned() ? line.interest : Money.ZERO,
                    line.earned());
        }
    }

    /** Records that a line's period began and what interest it earned. */
    void markEarned(String tenant, String borrowNo, int period, BigDecimal interest) {
        jdbc.update(
                "UPDATE repayment_schedule SET interest_due = ?, interest_earned = ? WHERE tenant_id = ? AND borrow_no = ?"
                        + " AND period = ?",
                interest,
                true,
                tenant,
                borrowNo,
                period);
    }

    void insertTenant(String id, String name) {
        jdbc.update("INSERT INTO tenant (id, name) VALUES (?, ?)", id, name);
    }

    boolean tenantExists(String id) {
        return jdbc.queryForObject("SELECT COUNT(*) FROM tenant WHERE id = ?", Integer.class, id) > 0;
    }

    void insertNote(Note n) {
        jdbc.update(
                "INSERT INTO loan_note (tenant_id, borrow_no, customer_id, principal, principal_outstanding,"
                        + " interest_outstanding, penalty_outstanding, annual_rate, term_months, start_date, status, version, demo)"
                        + " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                n.tenantId(),
                n.borrowNo(),
                n.customerId(),
                n.principal(),
                n.principalOutstanding(),
                n.interestOutstanding(),
                n.penaltyOutstanding(),
                n.annualRate(),
                n.termMonths(),
                java.sql.Date.valueOf(n.startDate()),
                n.status().name(),
                n.version(),
                n.demo());
    }

    /**
     * CAS: writes the note's new balances, status and term only if it is still in the status and
     * version that was read; 0 rows means another operation changed it first.
     */
    boolean compareAndSet(Note before, Note after) {
        return jdbc.update(
                        "UPDATE loan_note SET principal_outstanding = ?, interest_outstanding = ?, penalty_outstanding = ?,"
                                + " status = ?, term_months = ?, version = version + 1"
                                + " WHERE tenant_id = ? AND borrow_no = ? AND status = ? AND version = ?",
                        after.principalOutstanding(),
                        after.interestOutstanding(),
                        after.penaltyOutstanding(),
                        after.status().name(),
                        after.termMonths(),
                        before.tenantId(),
                        before.borrowNo(),
                        before.status().name(),
                        before.version())
                == 1;
    }

    private static Receipt receipt(ResultSet rs, int row) throws SQLException {
        return new Receipt(
                rs.getString("id"),
                rs.getString("borrow_no"),
                Channel.valueOf(rs.getString("source_type")),
                rs.getString("out_trade_no"),
                rs.getString("kind"),
                rs.getBigDecimal("amount"),
                rs.getBigDecimal("penalty_part"),
                rs.getBigDecimal("interest_part"),
                rs.getBigDecimal("principal_part"),
                rs.getBigDecimal("balance_after"),
                rs.getString("status"));
    }

    Optional<Receipt> flow(String tenant, String borrowNo, Channel channel, String outTradeNo) {
        return jdbc
                .query(
                        "SELECT * FROM repayment_flow WHERE tenant_id = ? AND borrow_no = ? AND source_type = ? AND out_trade_no = ?",
                        LoanRepository::receipt,
                        tenant,
                        borrowNo,
                        channel.name(),
                        outTradeNo)
                .stream()
                .findFirst();
    }

    Optional<Receipt> flowById(String tenant, String borrowNo, String id) {
        return jdbc
                .query(
                        "SELECT * FROM repayment_flow WHERE tenant_id = ? AND borrow_no = ? AND id = ?",
                        LoanRepository::receipt,
                        tenant,
                        borrowNo,
                        id)
                .stream()
                .findFirst();
    }

    List<Receipt> flows(String tenant, String borrowNo) {
        return jdbc.query(
                "SELECT * FROM repayment_flow WHERE tenant_id = ? AND borrow_no = ? ORDER BY created_at, id",
                LoanRepository::receipt,
                tenant,
                borrowNo);
    }

    /** Inserts a flow; a second one for the same trade number fails on the unique key. */
    void insertFlow(String tenant, Receipt r) {
        jdbc.update(
                "INSERT INTO repayment_flow (id, tenant_id, borrow_no, source_type, out_trade_no, kind, amount, penalty_part,"
                        + " interest_part, principal_part, balance_after, status, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                r.flowId(),
                tenant,
                r.borrowNo(),
                r.channel().name(),
                r.outTradeNo(),
                r.kind(),
                r.amount(),
                r.penaltyPart(),
                r.interestPart(),
                r.principalPart(),
                r.balanceAfter(),
                r.status(),
                Timestamp.from(Instant.now()));
    }

    boolean reverseFlow(String tenant, String borrowNo, String id) {
        return jdbc.update(
                        "UPDATE repayment_flow SET status = 'REVERSED' WHERE tenant_id = ? AND borrow_no = ? AND id = ? AND status = 'ACCEPTED'",
                        tenant,
                        borrowNo,
                        id)
                == 1;
    }

    long acceptedFlows(String tenant, String borrowNo) {
        return jdbc.queryForObject(
                "SELECT COUNT(*) FROM repayment_flow WHERE tenant_id = ? AND borrow_no = ? AND status = 'ACCEPTED'",
                Long.class,
                tenant,
                borrowNo);
    }

    /** Inserts a charge; a second one with the same key (one penalty per day) fails on the unique key. */
    void insertCharge(String tenant, String borrowNo, String kind, String key, BigDecimal amount, String text) {
        jdbc.update(
                "INSERT INTO note_charge (id, tenant_id, borrow_no, kind, charge_key, amount, note, created_at)"
                        + " VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                newId(),
                tenant,
                borrowNo,
                kind,
                key,
                amount,
                text,
                Timestamp.from(Instant.now()));
    }

    boolean chargeExists(String tenant, String borrowNo, String key) {
        return jdbc.queryForObject(
                        "SELECT COUNT(*) FROM note_charge WHERE tenant_id = ? AND borrow_no = ? AND charge_key = ?",
                        Integer.class,
                        tenant,
                        borrowNo,
                        key)
                > 0;
    }

    Conservation conservation(String tenant, String borrowNo) {
        Note note = find(tenant, borrowNo).orElseThrow(() -> new LoanProblems.NoteNotFound(tenant, borrowNo));
        BigDecimal charges = jdbc.queryForObject(
                "SELECT COALESCE(SUM(amount), 0) FROM note_charge WHERE tenant_id = ? AND borrow_no = ?",
                BigDecimal.class,
                tenant,
                borrowNo);
        BigDecimal repaid = jdbc.queryForObject(
                "SELECT COALESCE(SUM(amount), 0) FROM repayment_flow WHERE tenant_id = ? AND borrow_no = ? AND status = 'ACCEPTED'",
                BigDecimal.class,
                tenant,
                borrowNo);
        BigDecimal expected = Money.of(note.principal().add(charges).subtract(repaid));
        BigDecimal outstanding = Money.of(note.outstanding());
        return new Conservation(
                borrowNo,
                note.principal(),
                Money.of(charges),
                Money.of(repaid),
                expected,
                outstanding,
                acceptedFlows(tenant, borrowNo),
                expected.compareTo(outstanding) == 0);
    }

    /** A recorded operator command: its fingerprint and the answer it gave. */
    record CommandRecord(String command, String fingerprint, String responseBody) {}

    Optional<CommandRecord> command(String tenant, String key) {
        return jdbc
                .query(
                        "SELECT command, fingerprint, response_body FROM command_request WHERE tenant_id = ? AND idem_key = ?",
                        (rs, i) -> new CommandRecord(rs.getString(1), rs.getString(2), rs.getString(3)),
                        tenant,
                        key)
                .stream()
                .findFirst();
    }

    /** Records a command's answer; a second record of the same key fails on the primary key. */
    void insertCommand(String tenant, String key, String command, String fingerprint, String responseBody) {
        jdbc.update(
                "INSERT INTO command_request (tenant_id, idem_key, command, fingerprint, response_body, created_at)"
                        + " VALUES (?, ?, ?, ?, ?, ?)",
                tenant,
                key,
                command,
                fingerprint,
                responseBody,
                Timestamp.from(Instant.now()));
    }

    /** Delayed retries not yet run (the overdue job's busy notes). */
    int pendingRetries() {
        return jdbc.queryForObject("SELECT COUNT(*) FROM leasehold_retry WHERE status <> 'FAILED'", Integer.class);
    }
}
