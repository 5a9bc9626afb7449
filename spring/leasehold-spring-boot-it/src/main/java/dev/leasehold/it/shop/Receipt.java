package dev.leasehold.it.shop;

import java.math.BigDecimal;
import java.time.LocalDate;

/**
 * What a booked payment answers.
 *
 * @param id the payment's id
 * @param account the account
 * @param amount the amount booked
 * @param bookedBy the user who booked it
 * @param valueDate the day the money counts from
 */
public record Receipt(String id, String account, BigDecimal amount, String bookedBy, LocalDate valueDate) {}
