package dev.leasehold.it.shop;

import java.math.BigDecimal;

/**
 * A payment to book.
 *
 * @param account the account paid into
 * @param amount the amount, kept exactly ({@code 35.10} stays {@code 35.10})
 * @param note free text
 */
public record PaymentRequest(String account, BigDecimal amount, String note) {}
