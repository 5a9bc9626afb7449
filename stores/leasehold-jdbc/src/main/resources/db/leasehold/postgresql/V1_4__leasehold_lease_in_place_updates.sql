-- Leasehold 1.4 for PostgreSQL. Safe to run again.
-- Every acquire and release changes leasehold_lease.expires_at_ms. While an index covers that
-- column, PostgreSQL cannot update the row in place (a heap-only tuple): each change writes a new
-- entry into every index of the table. Without it, housekeeping (deleteExpired) finds expired rows
-- by a scan of the table that stops at its batch limit.
DROP INDEX IF EXISTS leasehold_lease_expiry;
