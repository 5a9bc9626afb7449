package dev.leasehold.examples.loan;

import org.springframework.test.context.TestPropertySource;

/** The storm on the embedded default: H2 with SQL leases. */
@TestPropertySource(properties = "spring.datasource.url=jdbc:h2:mem:loan-storm;DB_CLOSE_DELAY=-1")
class H2LoanStormTest extends AbstractLoanStormTest {}
