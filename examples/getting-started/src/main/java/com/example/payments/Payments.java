package com.example.payments;

import dev.leasehold.spring.web.Idempotent;
import org.springframework.http.ResponseEntity;
import org.springframework.web.bind.annotation.PostMapping;
import org.springframework.web.bind.annotation.RequestBody;
import org.springframework.web.bind.annotation.RequestParam;
import org.springframework.web.bind.annotation.RestController;

@RestController
public class Payments {
    private final Repayments repayments;

    public Payments(Repayments repayments) {
        this.repayments = repayments;
    }

    @PostMapping("/payments")
    @Idempotent
    public ResponseEntity<Repayments.Receipt> pay(@RequestParam String account, @RequestBody PaymentRequest request) {
        return ResponseEntity.ok(repayments.repay("demo", account, request.amount()));
    }

    public record PaymentRequest(java.math.BigDecimal amount) {}
}
