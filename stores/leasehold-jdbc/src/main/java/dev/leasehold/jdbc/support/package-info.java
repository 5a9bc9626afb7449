/**
 * SQL support shared by the lease store, fenced writes and the idempotency records: which database
 * a data source is ({@link dev.leasehold.jdbc.support.Databases}), statements with named
 * parameters ({@link dev.leasehold.jdbc.support.SqlStatement}), and work run as its own
 * transaction ({@link dev.leasehold.jdbc.support.OwnTransactions}).
 *
 * <p>The rule for work that must be its own atomic step (a grant, a release, a record's claim): it
 * never commits a caller's transaction and never joins it. A connection handed out with autocommit
 * on is used as it is. One handed out with autocommit off is used only when its driver says no
 * transaction is open on it ({@link dev.leasehold.jdbc.support.TransactionState#NONE}); the work
 * then runs in a transaction of its own, committed before the call returns. A connection inside a
 * transaction (a transaction-aware data source used inside the caller's transaction) is refused
 * with an {@link java.lang.IllegalStateException}, and so is one whose driver cannot tell: the
 * caller's work is never committed, and never rolled back, by the work run here. Give such work a
 * plain pool, with autocommit on.
 */
package dev.leasehold.jdbc.support;
