package dev.leasehold.spring.web;

import dev.leasehold.LeaseholdException;
import dev.leasehold.idempotency.CanonicalJson;
import dev.leasehold.idempotency.ClaimExpiredException;
import dev.leasehold.idempotency.IdempotencyConflictException;
import dev.leasehold.idempotency.IdempotentExecutor;
import dev.leasehold.idempotency.StoredResponse;
import dev.leasehold.spring.LeaseholdProperties;
import dev.leasehold.spring.retry.RetryLedger;
import java.sql.Connection;
import java.time.Duration;
import javax.sql.DataSource;
import org.springframework.context.ApplicationContext;
import org.springframework.jdbc.datasource.DataSourceUtils;
import org.springframework.transaction.PlatformTransactionManager;
import org.springframework.transaction.TransactionStatus;
import org.springframework.transaction.support.DefaultTransactionDefinition;
import org.springframework.transaction.support.TransactionSynchronization;
import org.springframework.transaction.support.TransactionSynchronizationManager;

/**
 * A {@link RetryLedger} on request records, scope {@code leasehold:retry}, one record per retry key,
 * claimed through the {@link IdempotentExecutor} as an {@code @Idempotent} request is: the claim is
 * renewed by the executor's heartbeat for as long as the retry runs, and the retry runs in a
 * transaction of the records' transaction manager that also writes the key's SUCCESS mark, token-
 * and fence-checked. A run whose claim was taken over, or not renewed in time, therefore cannot
 * commit its work; a run that fails leaves the key ERROR, to be run again.
 */
public final class RequestRecordLedger implements RetryLedger {

    static final String SCOPE = "leasehold:retry";
    private static final StoredResponse DONE = new StoredResponse(200, null);
    /** Unused: retries take no session lease, but a submission names its duration. */
    private static final Duration NO_SESSION = Duration.ofSeconds(30);

    private final IdempotentExecutor executor;
    private final PlatformTransactionManager transactions;
    private final DataSource dataSource;

    RequestRecordLedger(IdempotentExecutor executor, PlatformTransactionManager transactions, DataSource dataSource) {
        this.executor = executor;
        this.transactions = transactions;
        this.dataSource = dataSource;
    }

    /**
     * The ledger of delayed retries: request records, claimed through the same executor, JSON
     * mapper and transaction manager as {@code @Idempotent}, found on first use (the records bean
     * may be created after the retries); without an executor bean, every delivery runs.
     */
    public static RetryLedger forRetries(ApplicationContext context) {
        IdempotentServices services = new IdempotentServices(
                context.getBeanProvider(IdempotentExecutor.class),
                context.getBeanProvider(LeaseholdProperties.class),
                context.getBeanProvider(DataSource.class),
                context);
        return key -> {
            if (context.getBeanProvider(IdempotentExecutor.class).getIfAvailable() == null) {
                return RetryLedger.NONE.begin(key);
            }
            IdempotentInterceptor.Services s = services.get();
            return new RequestRecordLedger(s.executor(), s.transactions(), s.dataSource()).begin(key);
        };
    }

    @Override
    public Entry begin(String key) {
        // The fingerprint is the key's own: a key always matches itself.
        IdempotentExecutor.Start start = executor.start(new IdempotentExecutor.Submission(
                SCOPE, key, CanonicalJson.VERSION + CanonicalJson.sha256("retry:" + key), null, NO_SESSION));
        if (start instanceof IdempotentExecutor.Started started) {
            return new Claimed(key, started.execution());
        }
        if (start instanceof IdempotentExecutor.Mismatch) {
            throw new IllegalStateException("the retry record " + key + " carries another fingerprint");
        }
        State state = start instanceof IdempotentExecutor.Completed ? State.DONE : State.RUNNING_ELSEWHERE;
        return new Entry() {
            @Override
            public State state() {
                return state;
            }

            @Override
            public void run(Work work) {
                throw new IllegalStateException("retry " + key + " is " + state + ", not to be run");
            }

            @Override
            public void failed(String reason) {}
        };
    }

    /** A claimed key: its execution renews the claim until the transaction that marks it ends. */
    private final class Claimed implements Entry, TransactionSynchronization {
        private final String key;
        private final IdempotentExecutor.Execution execution;
        private volatile Throwable cause;

        Claimed(String key, IdempotentExecutor.Execution execution) {
            this.key = key;
            this.execution = execution;
        }

        @Override
        public State state() {
            return State.RUN;
        }

        @Override
        public void failed(String reason) {
            try {
                execution.rolledBack(new IllegalStateException(reason));
            } finally {
                execution.close();
            }
        }

        @Override
        public void run(Work work) throws Exception {
            TransactionStatus transaction;
            try {
                DefaultTransactionDefinition definition = new DefaultTransactionDefinition();
                definition.setName("leasehold-retry:" + key);
                transaction = transactions.getTransaction(definition);
                if (!TransactionSynchronizationManager.isSynchronizationActive()) {
                    transactions.rollback(transaction);
                    throw new LeaseholdException("delayed retries need transaction synchronization, but the"
                            + " transaction manager " + transactions.getClass().getName() + " does not activate it");
                }
                TransactionSynchronizationManager.registerSynchronization(this);
            } catch (RuntimeException e) {
                failed(String.valueOf(e));
                throw e;
            }
            try {
                execution.assertOwned();
                work.run();
                mark();
            } catch (Throwable t) {
                cause = t;
                try {
                    transactions.rollback(transaction);
                } catch (RuntimeException e) {
                    t.addSuppressed(e);
                }
                if (t instanceof Error error) {
                    throw error;
                }
                throw lost((Exception) t);
            }
            // A commit that fails is thrown as it is: the queue delivers the task again and the
            // ledger then finds it SUCCESS (it committed) or ERROR (it did not).
            transactions.commit(transaction);
        }

        private void mark() {
            Connection connection = DataSourceUtils.getConnection(dataSource);
            try {
                if (!DataSourceUtils.isConnectionTransactional(connection, dataSource)) {
                    throw new LeaseholdException("delayed retries write their done mark in the retry's transaction,"
                            + " but the transaction manager does not manage the DataSource of the request records;"
                            + " set leasehold.idempotency.transaction-manager to the one that does");
                }
                execution.completeInTransaction(connection, DONE);
            } finally {
                DataSourceUtils.releaseConnection(connection, dataSource);
            }
        }

        private Exception lost(Exception t) {
            if (t instanceof IdempotencyConflictException conflict
                    && (conflict instanceof ClaimExpiredException
                            || conflict.reason() == IdempotencyConflictException.Reason.TAKEN_OVER)) {
                return new ClaimLostException(
                        "retry " + key + " lost its claim while it ran; its work was rolled back", t);
            }
            return t;
        }

        @Override
        public void afterCompletion(int status) {
            execution.transactionEnded(status == STATUS_COMMITTED, status == STATUS_ROLLED_BACK, cause);
        }
    }
}
