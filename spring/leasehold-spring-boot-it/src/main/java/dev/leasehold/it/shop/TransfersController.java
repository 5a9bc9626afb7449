package dev.leasehold.it.shop;

import org.springframework.web.bind.annotation.PostMapping;
import org.springframework.web.bind.annotation.RequestBody;
import org.springframework.web.bind.annotation.RequestHeader;
import org.springframework.web.bind.annotation.RequestParam;
import org.springframework.web.bind.annotation.RestController;

/** Transfers over HTTP; not idempotent itself, its booking is. */
@RestController
public class TransfersController {

    private final Transfers transfers;

    public TransfersController(Transfers transfers) {
        this.transfers = transfers;
    }

    @PostMapping("/transfers")
    public Receipt transfer(
            @RequestHeader("Idempotency-Key") String key,
            @RequestBody PaymentRequest request,
            @RequestParam(defaultValue = "false") boolean fail) {
        return transfers.transfer(key, request, fail);
    }
}
