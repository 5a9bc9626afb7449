-- Leasehold 1.2 for H2: keys and owner tokens are already compared exactly (VARCHAR keeps and
-- compares trailing spaces), so only the columns' comments say so; the version keeps the sequence
-- the same on every database. Safe to run again.
COMMENT ON COLUMN leasehold_lease.owner_token IS 'compared exactly: w1 and w1 followed by a space are two owners';
COMMENT ON COLUMN leasehold_lease.lock_key IS 'compared exactly, as rendered by LockKey';
