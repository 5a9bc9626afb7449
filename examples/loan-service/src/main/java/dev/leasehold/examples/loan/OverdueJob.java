package dev.leasehold.examples.loan;

import dev.leasehold.examples.loan.Domain.Note;
import java.time.LocalDate;
import java.util.ArrayList;
import java.util.List;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.dao.DuplicateKeyException;
import org.springframework.scheduling.annotation.Scheduled;
import org.springframework.stereotype.Component;

/**
 * The overdue batch job: interest earned and penalty charged on notes behind their schedule. It runs
 * while live repayments arrive; each note is processed under its own lock, a busy note is retried
 * later from the durable retry table (S2.10), never skipped, and a note that fails is reported and
 * does not stop the others. With the lock bypassed, a note whose charges for the day a concurrent
 * run booked first (their unique key) is tried once more, finds them booked and is done, not failed
 * ({@code RedisOutageTest.racesInBypassModeEndIn409OrAnIdempotentAnswerNeverA500}).
 */
@Component
class OverdueJob {

    private static final Logger log = LoggerFactory.getLogger(OverdueJob.class);

    /** A note the run could not process, and why. */
    record Failure(String tenant, String borrowNo, String problem) {}

    /** What one run did: the notes it went through and the ones that failed. */
    record Run(LocalDate asOf, int notes, int processed, List<Failure> failures) {}

    private final LoanRepository repository;
    private final LoanService loans;
    private final BusinessCalendar calendar;

    OverdueJob(LoanRepository repository, LoanService loans, BusinessCalendar calendar) {
        this.repository = repository;
        this.loans = loans;
        this.calendar = calendar;
    }

    @Scheduled(cron = "${loan.overdue.cron:0 0 1 * * *}")
    void nightly() {
        run(null, null);
    }

    Run run(String tenant, LocalDate asOf) {
        LocalDate date = asOf != null ? asOf : calendar.today();
        List<Note> notes = repository.allOpenNotes().stream()
                .filter(n -> tenant == null || n.tenantId().equals(tenant))
                .toList();
        List<Failure> failures = new ArrayList<>();
        for (Note note : notes) {
            try {
                try {
                    loans.accruePenalty(note.tenantId(), note.borrowNo(), date);
                } catch (DuplicateKeyException raced) {
                    // Bypass mode: a concurrent run may have booked the note's charges for the date
                    // first (with its balances, in one transaction); once more finds them booked and
                    // charges nothing again. A record that really collides fails again and is reported.
                    loans.accruePenalty(note.tenantId(), note.borrowNo(), date);
                }
            } catch (RuntimeException e) {
                String problem = e instanceof LoanProblems.ConcurrentChange
                        ? "changed while processed; the next run picks it up"
                        : "failed unexpectedly; see the service log";
                log.warn("overdue run {}: note {}/{} {}", date, note.tenantId(), note.borrowNo(), problem, e);
                failures.add(new Failure(note.tenantId(), note.borrowNo(), problem));
            }
        }
        log.info("overdue run for {} over {} notes, {} failed", date, notes.size(), failures.size());
        return new Run(date, notes.size(), notes.size() - failures.size(), failures);
    }
}
