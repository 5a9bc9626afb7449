package dev.leasehold.it.shop;

import dev.leasehold.spring.web.Idempotent;
import java.util.concurrent.atomic.AtomicInteger;
import org.springframework.http.HttpStatus;
import org.springframework.web.bind.annotation.PostMapping;
import org.springframework.web.bind.annotation.RequestBody;
import org.springframework.web.bind.annotation.ResponseStatus;
import org.springframework.web.bind.annotation.RestController;

/** An idempotent endpoint without a body in its answer: 204. */
@RestController
public class NotificationsController {

    private final AtomicInteger sent = new AtomicInteger();

    @PostMapping("/notifications")
    @ResponseStatus(HttpStatus.NO_CONTENT)
    @Idempotent
    public void notify(@RequestBody PaymentRequest request) {
        sent.incrementAndGet();
    }

    /** How many notifications were sent. */
    public int sent() {
        return sent.get();
    }
}
