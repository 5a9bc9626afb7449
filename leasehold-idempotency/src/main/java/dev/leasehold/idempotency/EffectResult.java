package dev.leasehold.idempotency;

/**
 * The result of a side effect run at most once.
 *
 * @param value the effect's result (read back from the stored JSON when replayed)
 * @param businessId the business id recorded with it (for example a ledger transaction id), or null
 * @param replayed true when the effect had already succeeded and was not run again
 * @param <T> the result type
 */
public record EffectResult<T>(T value, String businessId, boolean replayed) {}
