package dev.leasehold.examples.loan;

import java.math.BigDecimal;
import java.time.LocalDate;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.boot.ApplicationArguments;
import org.springframework.boot.ApplicationRunner;
import org.springframework.boot.autoconfigure.condition.ConditionalOnProperty;
import org.springframework.stereotype.Component;

/**
 * Seeds a demo tenant on an empty database, so a newcomer can try the API at once: three notes
 * opened three months ago, and five demo notes STORM-1..STORM-5 that take the demo storm.
 */
@Component
@ConditionalOnProperty(name = "loan.demo.enabled", havingValue = "true", matchIfMissing = true)
class DemoData implements ApplicationRunner {

    private static final Logger log = LoggerFactory.getLogger(DemoData.class);
    static final String TENANT = "demo";
    static final int STORM_NOTES = 5;

    private final LoanRepository repository;
    private final LoanService loans;
    private final BusinessCalendar calendar;

    DemoData(LoanRepository repository, LoanService loans, BusinessCalendar calendar) {
        this.repository = repository;
        this.loans = loans;
        this.calendar = calendar;
    }

    @Override
    public void run(ApplicationArguments args) {
        if (repository.tenantExists(TENANT)) {
            return;
        }
        repository.insertTenant(TENANT, "Demo Microcredit");
        LocalDate today = calendar.today();
        LocalDate start = today.minusMonths(3);
        loans.open(TENANT, "B20240315001", "C001", new BigDecimal("12000.00"), new BigDecimal("0.12"), 12, start);
        loans.open(TENANT, "B20240315002", "C001", new BigDecimal("5000.00"), new BigDecimal("0.10"), 6, start);
        loans.open(TENANT, "B20240315003", "C002", new BigDecimal("30000.00"), new BigDecimal("0.085"), 24, start);
        for (int i = 1; i <= STORM_NOTES; i++) {
            loans.open(
                    TENANT, "STORM-" + i, "C900", new BigDecimal("100000.00"), new BigDecimal("0.12"), 12, today, true);
        }
        log.info("demo tenant '{}' seeded: notes B20240315001..003 and demo notes STORM-1..{}", TENANT, STORM_NOTES);
    }
}
