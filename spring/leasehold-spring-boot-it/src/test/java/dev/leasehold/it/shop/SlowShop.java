package dev.leasehold.it.shop;

import dev.leasehold.spring.web.Idempotent;
import java.security.Principal;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.springframework.http.ResponseEntity;
import org.springframework.stereotype.Component;
import org.springframework.stereotype.Service;
import org.springframework.transaction.annotation.Transactional;
import org.springframework.web.bind.annotation.PostMapping;
import org.springframework.web.bind.annotation.RequestBody;
import org.springframework.web.bind.annotation.RequestHeader;
import org.springframework.web.bind.annotation.RestController;

/**
 * Test-only endpoints of the shop whose transactions stay open until the test opens a gate: a
 * transfer whose transaction holds its booking (SUCCESS mark written, row locked, not committed),
 * and an idempotent payment whose own transaction holds its booking.
 */
public final class SlowShop {

    private SlowShop() {}

    /** Where the slow requests wait, and how the test knows they are waiting. */
    @Component
    public static class Gate {
        final CountDownLatch transferHolding = new CountDownLatch(1);
        final CountDownLatch paymentHolding = new CountDownLatch(1);
        final CountDownLatch release = new CountDownLatch(1);

        void hold(CountDownLatch holding) throws InterruptedException {
            holding.countDown();
            if (!release.await(60, TimeUnit.SECONDS)) {
                throw new IllegalStateException("the gate was never opened");
            }
        }
    }

    /** A transfer whose transaction stays open after its idempotent booking. */
    @Service
    public static class SlowTransfers {
        private final Bookings bookings;
        private final Gate gate;

        public SlowTransfers(Bookings bookings, Gate gate) {
            this.bookings = bookings;
            this.gate = gate;
        }

        @Transactional
        public Receipt transfer(String key, PaymentRequest request) throws InterruptedException {
            Receipt receipt = bookings.book(key, request);
            gate.hold(gate.transferHolding);
            return receipt;
        }
    }

    /** The slow endpoints. */
    @RestController
    public static class SlowController {
        private final SlowTransfers transfers;
        private final Ledger ledger;
        private final Gate gate;
        private final Map<String, AtomicInteger> paymentRuns = new ConcurrentHashMap<>();

        public SlowController(SlowTransfers transfers, Ledger ledger, Gate gate) {
            this.transfers = transfers;
            this.ledger = ledger;
            this.gate = gate;
        }

        @PostMapping("/slow-transfers")
        public Receipt transfer(@RequestHeader("Idempotency-Key") String key, @RequestBody PaymentRequest request)
                throws InterruptedException {
            return transfers.transfer(key, request);
        }

        /** Books, then keeps the booking's transaction (the interceptor's) open until the gate opens. */
        @PostMapping("/slow-payments")
        @Idempotent(payload = "#request")
        public ResponseEntity<Receipt> pay(@RequestBody PaymentRequest request, Principal principal)
                throws InterruptedException {
            paymentRuns
                    .computeIfAbsent(request.account(), a -> new AtomicInteger())
                    .incrementAndGet();
            Receipt receipt = ledger.book(request, principal.getName());
            gate.hold(gate.paymentHolding);
            return ResponseEntity.status(201).body(receipt);
        }

        int paymentRuns(String account) {
            AtomicInteger runs = paymentRuns.get(account);
            return runs == null ? 0 : runs.get();
        }
    }
}
