package dev.leasehold.it.shop;

import dev.leasehold.spring.web.Idempotent;
import jakarta.servlet.http.HttpServletRequest;
import java.net.URI;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;
import org.springframework.http.HttpHeaders;
import org.springframework.http.HttpStatus;
import org.springframework.http.ProblemDetail;
import org.springframework.http.ResponseEntity;
import org.springframework.web.bind.annotation.PostMapping;
import org.springframework.web.bind.annotation.RequestBody;
import org.springframework.web.bind.annotation.RestController;

/**
 * Payments over HTTP with an {@code Idempotency-Key} header and the default scope, payload and
 * fingerprint: the method takes the servlet request as well as the body.
 */
@RestController
public class PaymentsController {

    private final Ledger ledger;
    private final Map<String, AtomicInteger> executions = new ConcurrentHashMap<>();

    public PaymentsController(Ledger ledger) {
        this.ledger = ledger;
    }

    /**
     * Books a payment: 201 with {@code Location}, {@code ETag}, a cookie and a per-response trace
     * header. An account named {@code frozen-*} is refused with a business 422; one named {@code
     * flaky-*} answers 503 after its write (a failure: it must not be stored, nor its write kept).
     */
    @PostMapping("/payments")
    @Idempotent
    public ResponseEntity<?> pay(@RequestBody PaymentRequest request, HttpServletRequest http) {
        executions.computeIfAbsent(request.account(), a -> new AtomicInteger()).incrementAndGet();
        if (request.account().startsWith("frozen-")) {
            ProblemDetail refused = ProblemDetail.forStatusAndDetail(
                    HttpStatus.UNPROCESSABLE_CONTENT, "account " + request.account() + " is frozen");
            refused.setType(URI.create("https://shop.example/problems/account-frozen"));
            return ResponseEntity.unprocessableContent().body(refused);
        }
        Receipt receipt = ledger.book(request, http.getUserPrincipal().getName());
        if (request.account().startsWith("flaky-")) {
            return ResponseEntity.status(HttpStatus.SERVICE_UNAVAILABLE).body(Map.of("error", "downstream failed"));
        }
        return ResponseEntity.created(URI.create("/payments/" + receipt.id()))
                .eTag("\"" + receipt.id() + "\"")
                .header(HttpHeaders.SET_COOKIE, "last-payment=" + receipt.id())
                .header("X-Trace", UUID.randomUUID().toString())
                .body(receipt);
    }

    /** How many times {@link #pay} ran for the account. */
    public int executions(String account) {
        AtomicInteger count = executions.get(account);
        return count == null ? 0 : count.get();
    }
}
