package dev.leasehold.jdbc;

import java.sql.SQLException;

/**
 * The COMMIT of a fenced write failed in a way that leaves its outcome unknown: the connection was
 * lost after COMMIT was sent (SQLState class 08, or no state at all), so the server may have
 * committed the write or not. The write may have been committed: check the data before doing it
 * again, and never blindly re-apply a change that is not idempotent (a debit, an append), since an
 * equal fence from the same owner is accepted again.
 */
public class FencedCommitOutcomeUnknownException extends SQLException {
    private static final long serialVersionUID = 1L;

    /** An in-doubt commit of the fenced write to {@code resource}, caused by {@code cause}. */
    public FencedCommitOutcomeUnknownException(String resource, SQLException cause) {
        super(
                "the outcome of the fenced write to " + resource + " is unknown: the commit failed after it was sent ("
                        + cause.getMessage() + "), so the write may have been committed; check before retrying, and"
                        + " never blindly re-apply a change that is not idempotent",
                cause.getSQLState(),
                cause.getErrorCode(),
                cause);
    }
}
