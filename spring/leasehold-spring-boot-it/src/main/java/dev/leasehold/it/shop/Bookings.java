package dev.leasehold.it.shop;

import dev.leasehold.spring.web.Idempotent;
import org.springframework.security.core.context.SecurityContextHolder;
import org.springframework.stereotype.Service;

/** Idempotent bookings called from other services (not an HTTP handler): the key is an argument. */
@Service
public class Bookings {

    private final Ledger ledger;

    public Bookings(Ledger ledger) {
        this.ledger = ledger;
    }

    /** Books once per key; the receipt is stored as JSON and read back into a {@link Receipt}. */
    @Idempotent(key = "#key", payload = "#request")
    public Receipt book(String key, PaymentRequest request) {
        return ledger.book(
                request, SecurityContextHolder.getContext().getAuthentication().getName());
    }
}
