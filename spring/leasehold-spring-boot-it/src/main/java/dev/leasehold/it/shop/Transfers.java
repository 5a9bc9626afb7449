package dev.leasehold.it.shop;

import org.springframework.stereotype.Service;
import org.springframework.transaction.annotation.Transactional;

/** A caller with its own transaction around an idempotent booking. */
@Service
public class Transfers {

    /** The transfer failed after the booking; its transaction rolls back. */
    public static class TransferFailedException extends RuntimeException {
        private static final long serialVersionUID = 1L;

        public TransferFailedException(String message) {
            super(message);
        }
    }

    private final Bookings bookings;

    public Transfers(Bookings bookings) {
        this.bookings = bookings;
    }

    /** Books the payment, then fails if asked to: the whole transaction, booking included, rolls back. */
    @Transactional
    public Receipt transfer(String key, PaymentRequest request, boolean failAfterBooking) {
        Receipt receipt = bookings.book(key, request);
        if (failAfterBooking) {
            throw new TransferFailedException("the transfer failed after booking " + receipt.id());
        }
        return receipt;
    }
}
