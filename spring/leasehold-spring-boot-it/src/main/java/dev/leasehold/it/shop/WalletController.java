package dev.leasehold.it.shop;

import dev.leasehold.spring.web.Idempotent;
import java.net.URI;
import java.security.Principal;
import org.springframework.http.ResponseEntity;
import org.springframework.web.bind.annotation.PostMapping;
import org.springframework.web.bind.annotation.RequestBody;
import org.springframework.web.bind.annotation.RestController;

/**
 * Payments open to guests as well as signed-in users, with the default per-caller scope (the
 * {@code X-Tenant} header and the principal): a guest books as {@code guest}.
 */
@RestController
public class WalletController {

    private final Ledger ledger;

    public WalletController(Ledger ledger) {
        this.ledger = ledger;
    }

    @PostMapping("/wallet/payments")
    @Idempotent
    public ResponseEntity<Receipt> pay(@RequestBody PaymentRequest request, Principal principal) {
        Receipt receipt = ledger.book(request, principal == null ? "guest" : principal.getName());
        return ResponseEntity.created(URI.create("/payments/" + receipt.id())).body(receipt);
    }

    /** A deposit whose amount and memo the application reads but never writes back out. */
    @PostMapping("/wallet/deposits")
    @Idempotent
    public ResponseEntity<Receipt> deposit(@RequestBody Deposit deposit, Principal principal) {
        Receipt receipt = ledger.book(
                new PaymentRequest(deposit.getAccount(), deposit.amount(), deposit.memo()),
                principal == null ? "guest" : principal.getName());
        return ResponseEntity.created(URI.create("/payments/" + receipt.id())).body(receipt);
    }
}
