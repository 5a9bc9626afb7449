package dev.leasehold.spring.lock;

import dev.leasehold.Lease;
import dev.leasehold.LeaseInfo;
import dev.leasehold.LeaseLostException;
import dev.leasehold.LockService;
import java.util.List;
import java.util.Optional;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.transaction.ConfigurableTransactionManager;
import org.springframework.transaction.PlatformTransactionManager;
import org.springframework.transaction.TransactionExecution;
import org.springframework.transaction.TransactionExecutionListener;
import org.springframework.transaction.TransactionStatus;
import org.springframework.transaction.support.TransactionSynchronization;
import org.springframework.transaction.support.TransactionSynchronizationManager;
import org.springframework.transaction.support.TransactionSynchronizationUtils;

/**
 * Refuses the commit of a transaction that runs under {@link Locked} leases no longer held: just
 * before the commit, after the transaction's pending writes are flushed, each lease is checked
 * locally and against the store (its owner and fence must still be the store's), and a lease that
 * is not throws {@link LeaseLostException}, so the transaction rolls back. Added to every
 * transaction manager bean of the context that takes listeners, it covers the transactions a
 * {@code @Locked} method begins through one; a caller's transaction the method joins is checked by
 * a synchronization the interceptor registers. Loaded only when spring-tx is present.
 */
final class LockedCommitCheck implements TransactionExecutionListener {

    private static final Logger log = LoggerFactory.getLogger(LockedCommitCheck.class);

    static final LockedCommitCheck INSTANCE = new LockedCommitCheck();

    private LockedCommitCheck() {}

    /**
     * Adds the check to {@code bean} if it is a transaction manager that takes listeners; warns,
     * naming the bean, for a transaction manager that does not, since the transactions it begins
     * itself are not checked.
     */
    static Object addTo(Object bean, String beanName) {
        if (bean instanceof ConfigurableTransactionManager manager) {
            if (!manager.getTransactionExecutionListeners().contains(INSTANCE)) {
                manager.addListener(INSTANCE);
            }
        } else if (bean instanceof PlatformTransactionManager) {
            log.warn(
                    "transaction manager bean '{}' ({}) takes no transaction listeners: a transaction it begins"
                            + " inside a @Locked method is not checked for a lost lease before it commits, unless"
                            + " it begins it through a transaction manager that takes listeners",
                    beanName,
                    bean.getClass().getName());
        }
        return bean;
    }

    @Override
    public void afterBegin(TransactionExecution transaction, Throwable beginFailure) {
        if (beginFailure != null || !TransactionSynchronizationManager.isSynchronizationActive()) {
            return;
        }
        Runnable check = LockedContext.commitCheck();
        if (check != null) {
            registerBeforeCommit(check, transaction instanceof TransactionStatus status ? status : null);
        }
    }

    /** Runs {@code check} just before the current transaction commits; returns false if none is active. */
    static boolean registerBeforeCommit(Runnable check) {
        return registerBeforeCommit(check, null);
    }

    /**
     * Runs {@code check} just before the current transaction commits, after flushing its pending
     * writes ({@code status}'s, or else the synchronizations'; none if read-only), so the check follows the unit of
     * work's SQL; a failing flush propagates and the transaction rolls back.
     */
    private static boolean registerBeforeCommit(Runnable check, TransactionStatus status) {
        if (!TransactionSynchronizationManager.isSynchronizationActive()) {
            return false;
        }
        TransactionSynchronizationManager.registerSynchronization(new TransactionSynchronization() {
            @Override
            public int getOrder() {
                return LOWEST_PRECEDENCE; // after the application's own before-commit work
            }

            @Override
            public void beforeCommit(boolean readOnly) {
                if (!readOnly && status != null) {
                    status.flush();
                } else if (!readOnly) {
                    TransactionSynchronizationUtils.triggerFlush();
                }
                check.run();
            }
        });
        return true;
    }

    /** Throws {@link LeaseLostException} unless every lease is still held, locally and in the store. */
    static void verify(LockService locks, List<Lease> leases) {
        for (Lease lease : leases) {
            lease.assertHeld();
            Optional<LeaseInfo> stored = locks.inspect(lease.key());
            if (stored.isEmpty()
                    || stored.get().fence() != lease.fence()
                    || !stored.get().ownerToken().equals(lease.ownerToken())) {
                throw new LeaseLostException(
                        lease.key(),
                        lease.fence(),
                        "the lease was lost before the transaction committed"
                                + stored.map(info -> " (the key's fence is now " + info.fence() + ")")
                                        .orElse(" (the key is free)")
                                + "; the transaction was rolled back");
            }
        }
    }
}
