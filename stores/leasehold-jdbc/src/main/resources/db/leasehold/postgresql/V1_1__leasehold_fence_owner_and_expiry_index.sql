-- Leasehold 1.1 for PostgreSQL (9.6 or later). Safe to run again: it only adds what is missing.
-- The owner of the newest accepted fence (SHA-256 of its token, hex), so that an equal fence is
-- accepted again only from the same owner. NULL for fences accepted without an owner.
ALTER TABLE leasehold_fence ADD COLUMN IF NOT EXISTS owner_digest VARCHAR(64);

-- Housekeeping (deleteExpired) finds expired and released rows through this index.
CREATE INDEX IF NOT EXISTS leasehold_lease_expiry ON leasehold_lease (expires_at_ms);

-- A release now records its time in expires_at_ms, so retention counts from it; rows released
-- before this version (expires_at_ms = 0) count from now.
UPDATE leasehold_lease SET expires_at_ms = (EXTRACT(EPOCH FROM statement_timestamp()) * 1000)::BIGINT
 WHERE expires_at_ms = 0;
