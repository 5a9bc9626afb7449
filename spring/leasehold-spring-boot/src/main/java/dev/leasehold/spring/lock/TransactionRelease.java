package dev.leasehold.spring.lock;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.transaction.support.TransactionSynchronization;
import org.springframework.transaction.support.TransactionSynchronizationManager;

/**
 * Defers a release to the end of the caller's transaction: releasing before commit would let the
 * next holder read data this holder has not committed yet. Loaded only when spring-tx is
 * present.
 */
final class TransactionRelease {

    private static final Logger log = LoggerFactory.getLogger(TransactionRelease.class);

    private TransactionRelease() {}

    /** Registers the release for after completion if a transaction is active; returns whether it did. */
    static boolean deferIfInTransaction(AutoCloseable held) {
        if (!TransactionSynchronizationManager.isSynchronizationActive()) {
            return false;
        }
        TransactionSynchronizationManager.registerSynchronization(new TransactionSynchronization() {
            @Override
            public int getOrder() {
                return LOWEST_PRECEDENCE; // after every other synchronization of the transaction
            }

            @Override
            public void afterCompletion(int status) {
                try {
                    LockedInterceptor.close(held);
                } catch (Exception e) {
                    log.warn("release after the transaction failed; the lease ends at its expiry", e);
                }
            }
        });
        return true;
    }
}
