package dev.leasehold.examples.ledger;

import org.springframework.test.context.TestPropertySource;

/** The chat on the embedded default: H2 with SQL leases. */
@TestPropertySource(properties = "spring.datasource.url=jdbc:h2:mem:ledger-it;DB_CLOSE_DELAY=-1")
class H2ChatTest extends AbstractChatTest {}
