package dev.leasehold.idempotency;

import java.sql.Connection;

/**
 * A side effect that writes to the same database as its record: it runs on the connection of the
 * transaction that also marks it SUCCESS, so the write and its mark commit together or not at all.
 * It must not commit, roll back or close the connection.
 *
 * @param <T> its result, stored as JSON
 */
@FunctionalInterface
public interface TransactionalEffect<T> {

    /** Performs the effect in the transaction. */
    T apply(Connection transaction) throws Exception;
}
