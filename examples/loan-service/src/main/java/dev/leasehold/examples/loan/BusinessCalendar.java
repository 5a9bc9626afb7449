package dev.leasehold.examples.loan;

import java.time.Clock;
import java.time.LocalDate;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.stereotype.Component;

/**
 * The business date: today on the application's {@link Clock} bean, or on the system clock when
 * there is none. Money rules and the overdue run go by it.
 */
@Component
class BusinessCalendar {

    private final Clock clock;

    BusinessCalendar(ObjectProvider<Clock> clock) {
        this.clock = clock.getIfAvailable(Clock::systemDefaultZone);
    }

    LocalDate today() {
        return LocalDate.now(clock);
    }
}
