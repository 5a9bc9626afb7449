package dev.leasehold.spring.it;

import dev.leasehold.spring.web.Idempotent;
import java.util.UUID;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.springframework.http.HttpStatus;
import org.springframework.http.ResponseEntity;
import org.springframework.web.bind.annotation.PathVariable;
import org.springframework.web.bind.annotation.PostMapping;
import org.springframework.web.bind.annotation.RequestBody;
import org.springframework.web.bind.annotation.RestController;

@RestController
public class PaymentsController {

    public record PaymentRequest(long amount, String note) {}

    public record Receipt(String id, String account, long amount) {}

    private final AtomicInteger executions = new AtomicInteger();
    private volatile CountDownLatch gate = new CountDownLatch(0);
    private final Accounts accounts;

    public PaymentsController(Accounts accounts) {
        this.accounts = accounts;
    }

    @PostMapping("/accounts/{id}/payments")
    @Idempotent(scope = "'pay:' + #id", payload = "#request")
    public ResponseEntity<Receipt> pay(@PathVariable String id, @RequestBody PaymentRequest request)
            throws InterruptedException {
        executions.incrementAndGet();
        gate.await(30, TimeUnit.SECONDS);
        accounts.addNow("t1", id, request.amount());
        return ResponseEntity.status(HttpStatus.CREATED)
                .body(new Receipt(UUID.randomUUID().toString(), id, request.amount()));
    }

    /** How many times pay ran (a method: the controller is proxied). */
    public int executions() {
        return executions.get();
    }

    /** Makes pay wait for the latch. */
    public void gate(CountDownLatch latch) {
        this.gate = latch;
    }

    @PostMapping("/accounts/{id}/deposits")
    public long deposit(@PathVariable String id, @RequestBody PaymentRequest request) {
        return accounts.addNow("t1", id, request.amount());
    }
}
