package dev.leasehold.examples.loan;

import dev.leasehold.examples.loan.Domain.Note;
import java.time.LocalDate;
import java.util.List;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.scheduling.annotation.Scheduled;
import org.springframework.stereotype.Component;

/**
 * The overdue batch job: penalty interest on notes behind their schedule. It runs while live
 * repayments arrive; each note is processed under its own lock, and a busy note is retried later
 * from the durable retry table (S2.10), never skipped.
 */
@Component
class OverdueJob {

    private static final Logger log = LoggerFactory.getLogger(OverdueJob.class);

    record Run(LocalDate asOf, int notes) {}

    private final LoanRepository repository;
    private final LoanService loans;

    OverdueJob(LoanRepository repository, LoanService loans) {
        this.repository = repository;
        this.loans = loans;
    }

    @Scheduled(cron = "${loan.overdue.cron:0 0 1 * * *}")
    void nightly() {
        run(null, null);
    }

    Run run(String tenant, LocalDate asOf) {
        LocalDate date = asOf != null ? asOf : repository.today();
        List<Note> notes = repository.allOpenNotes().stream()
                .filter(n -> tenant == null || n.tenantId().equals(tenant))
                .toList();
        for (Note note : notes) {
            try {
                loans.accruePenalty(note.tenantId(), note.borrowNo(), date);
            } catch (LoanProblems.ConcurrentChange e) {
                log.info("overdue: {} changed while processed; the next run picks it up", note.borrowNo());
            }
        }
        log.info("overdue run for {} over {} notes", date, notes.size());
        return new Run(date, notes.size());
    }
}
