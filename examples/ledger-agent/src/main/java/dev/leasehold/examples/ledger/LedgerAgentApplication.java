package dev.leasehold.examples.ledger;

import org.springframework.boot.SpringApplication;
import org.springframework.boot.autoconfigure.SpringBootApplication;

/** Seed 1's AI bookkeeping chat on Leasehold's session, request and side-effect leases. */
@SpringBootApplication
public class LedgerAgentApplication {

    public static void main(String[] args) {
        SpringApplication.run(LedgerAgentApplication.class, args);
    }
}
