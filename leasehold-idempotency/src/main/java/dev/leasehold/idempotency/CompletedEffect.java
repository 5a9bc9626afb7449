package dev.leasehold.idempotency;

/**
 * A side effect that succeeded, for recovery: enough to rebuild a reply without running anything
 * again.
 *
 * @param name the effect's name
 * @param argumentsHash the SHA-256 of its canonical arguments
 * @param resultJson its stored result
 * @param businessId its business id, or null
 */
public record CompletedEffect(String name, String argumentsHash, String resultJson, String businessId) {}
