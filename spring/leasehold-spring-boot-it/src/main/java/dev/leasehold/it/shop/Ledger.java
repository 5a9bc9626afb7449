package dev.leasehold.it.shop;

import java.math.BigDecimal;
import java.time.LocalDate;
import java.util.UUID;
import org.springframework.beans.factory.annotation.Value;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.stereotype.Service;
import org.springframework.transaction.annotation.Transactional;
import org.springframework.transaction.support.TransactionSynchronization;
import org.springframework.transaction.support.TransactionSynchronizationManager;

/** The business write: one row in {@code shop_payment} per booking, in its own (or the caller's) transaction. */
@Service
public class Ledger {

    /** The value date of every booking (a fixed day keeps responses comparable). */
    public static final LocalDate VALUE_DATE = LocalDate.of(2026, 3, 31);

    private final JdbcTemplate jdbc;
    private final String haltAfterCommitNote;

    public Ledger(JdbcTemplate jdbc, @Value("${shop.halt-after-commit-note:}") String haltAfterCommitNote) {
        this.jdbc = jdbc;
        this.haltAfterCommitNote = haltAfterCommitNote;
    }

    /**
     * Books a payment. With {@code shop.halt-after-commit-note} set to the payment's note, the JVM
     * halts right after the booking's transaction commits, before anything else runs: a crash
     * between the commit and whatever comes after it.
     */
    @Transactional
    public Receipt book(PaymentRequest request, String user) {
        String id = UUID.randomUUID().toString();
        jdbc.update(
                "INSERT INTO shop_payment (id, account, amount, booked_by) VALUES (?, ?, ?, ?)",
                id,
                request.account(),
                request.amount(),
                user);
        if (!haltAfterCommitNote.isEmpty() && haltAfterCommitNote.equals(request.note())) {
            TransactionSynchronizationManager.registerSynchronization(new TransactionSynchronization() {
                @Override
                public void afterCommit() {
                    Runtime.getRuntime().halt(99);
                }
            });
        }
        return new Receipt(id, request.account(), request.amount(), user, VALUE_DATE);
    }

    /** How many payments the account has. */
    public int payments(String account) {
        return jdbc.queryForObject("SELECT COUNT(*) FROM shop_payment WHERE account = ?", Integer.class, account);
    }

    /** The sum booked into the account. */
    public BigDecimal total(String account) {
        return jdbc.queryForObject(
                "SELECT COALESCE(SUM(amount), 0) FROM shop_payment WHERE account = ?", BigDecimal.class, account);
    }
}
