package dev.leasehold.idempotency;

import java.sql.Connection;
import java.sql.SQLException;
import java.util.Objects;
import javax.sql.DataSource;

/**
 * Runs the work of a claimed execution and its SUCCESS mark as one transaction, and tells the
 * execution how the transaction ended: rolled back (the work failed, or the claim was lost before
 * the mark), committed, or a commit that failed with an unknown outcome.
 */
final class OneTransaction {

    private OneTransaction() {}

    /** Runs {@code work} on a connection of {@code dataSource}; returns its committed response. */
    static StoredResponse run(
            DataSource dataSource, IdempotentExecutor.Execution execution, IdempotentExecutor.TransactionalWork work)
            throws Exception {
        try (Connection c = dataSource.getConnection()) {
            boolean autoCommit = c.getAutoCommit();
            try {
                c.setAutoCommit(false);
                StoredResponse response;
                try {
                    execution.assertOwned();
                    response = work.run(c, execution);
                    Objects.requireNonNull(response, "the work returned no response (null)");
                    execution.completeInTransaction(c, response);
                } catch (Exception e) {
                    Transactions.rollback(c, e);
                    execution.rolledBack(e);
                    throw e;
                }
                try {
                    c.commit();
                } catch (SQLException e) {
                    throw execution.outcomeUnknown(e);
                }
                execution.committed();
                return response;
            } finally {
                Transactions.restoreAutoCommit(c, autoCommit);
            }
        }
    }
}
