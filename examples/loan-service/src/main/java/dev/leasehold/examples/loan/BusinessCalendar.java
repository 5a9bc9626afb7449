package dev.leasehold.examples.loan;

import java.time.Clock;
import java.time.LocalDate;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.stereotype.Component;

/** The business date: today on the service's clock. Money rules and the overdue run go by it. */
@Component
class BusinessCalendar {

    private final Clock clock;

    BusinessCalendar(Clock clock) {
        this.clock = clock;
    }

    LocalDate today() {
        return LocalDate.now(clock);
    }

    /** The system clock, unless the application (or a test) brings its own. */
    @Configuration(proxyBeanMethods = false)
    static class ClockConfiguration {
        @Bean
        @ConditionalOnMissingBean
        Clock clock() {
            return Clock.systemDefaultZone();
        }
    }
}
