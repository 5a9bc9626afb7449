package dev.leasehold.it.shop;

import dev.leasehold.spring.web.Idempotent;
import java.math.BigDecimal;
import org.springframework.web.bind.annotation.PostMapping;
import org.springframework.web.bind.annotation.RequestBody;
import org.springframework.web.bind.annotation.RestController;

/** Refunds: refused with a checked exception, which the application's own handler answers. */
@RestController
public class Refunds {

    /** A checked business exception. */
    public static class RefundRejectedException extends Exception {
        private static final long serialVersionUID = 1L;

        public RefundRejectedException(String message) {
            super(message);
        }
    }

    /** Something Jackson cannot write: its getter fails. */
    public static class Unwritable {
        public String getValue() {
            throw new IllegalStateException("this value cannot be written");
        }
    }

    /** Refuses every refund above 100 with a checked exception. */
    @PostMapping("/refunds")
    @Idempotent
    public BigDecimal refund(@RequestBody PaymentRequest request) throws RefundRejectedException {
        if (request.amount().compareTo(BigDecimal.valueOf(100)) > 0) {
            throw new RefundRejectedException("refunds above 100 need a manager");
        }
        return request.amount();
    }

    /** Returns a value that cannot be stored as JSON. */
    @PostMapping("/unwritable")
    @Idempotent
    public Unwritable unwritable(@RequestBody PaymentRequest request) {
        return new Unwritable();
    }
}
