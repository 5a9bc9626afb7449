package dev.leasehold.examples.loan;

import java.time.Clock;
import java.time.ZoneId;
import org.springframework.boot.test.context.TestConfiguration;
import org.springframework.context.annotation.Bean;
import org.springframework.security.provisioning.InMemoryUserDetailsManager;

/** Test wiring: the movable business clock, and principals for each test tenant. */
@TestConfiguration(proxyBeanMethods = false)
class LoanTestSupport {

    @Bean
    Clock testClock() {
        return new TestClock(ZoneId.systemDefault());
    }

    /** Adds {@code <tenant>-app} (TENANT) and {@code <tenant>-ops} (OPERATOR), as {@link Api} calls them. */
    static void principals(InMemoryUserDetailsManager users, String tenant) {
        LoanSecurity.addUser(users, tenant + "-app", tenant + "-app-pw", tenant, "TENANT");
        LoanSecurity.addUser(users, tenant + "-ops", tenant + "-ops-pw", tenant, "OPERATOR");
    }
}
