package dev.leasehold.examples.loan;

import java.math.BigDecimal;
import java.time.LocalDate;
import java.util.UUID;
import org.junit.jupiter.api.BeforeEach;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.web.server.LocalServerPort;
import org.springframework.context.annotation.Import;
import org.springframework.security.provisioning.InMemoryUserDetailsManager;
import org.springframework.test.context.TestPropertySource;

/**
 * The service on its embedded default (H2, SQL leases) over HTTP, one context shared by the test
 * classes that extend this; each test gets its own tenant with a channel and an operator principal.
 */
@SpringBootTest(
        webEnvironment = SpringBootTest.WebEnvironment.RANDOM_PORT,
        properties = {"loan.demo.enabled=false", "loan.overdue.cron=-"})
@TestPropertySource(properties = "spring.datasource.url=jdbc:h2:mem:loan-rules;DB_CLOSE_DELAY=-1")
@Import(LoanTestSupport.class)
abstract class H2ServiceTest {

    @LocalServerPort
    int port;

    @Autowired
    LoanService loans;

    @Autowired
    LoanRepository repository;

    @Autowired
    InMemoryUserDetailsManager users;

    @Autowired
    BusinessCalendar calendar;

    @Autowired
    org.springframework.jdbc.core.JdbcTemplate jdbc;

    Api api;
    String tenant;
    LocalDate today;

    @BeforeEach
    void tenant() {
        tenant = "t" + UUID.randomUUID().toString().substring(0, 8);
        repository.insertTenant(tenant, "test tenant");
        LoanTestSupport.principals(users, tenant);
        api = new Api(port, tenant);
        today = calendar.today();
    }

    String open(String principal, int term, LocalDate start) {
        String borrowNo = "B" + UUID.randomUUID().toString().substring(0, 10).toUpperCase();
        loans.open(tenant, borrowNo, "C1", new BigDecimal(principal), new BigDecimal("0.12"), term, start);
        return borrowNo;
    }
}
