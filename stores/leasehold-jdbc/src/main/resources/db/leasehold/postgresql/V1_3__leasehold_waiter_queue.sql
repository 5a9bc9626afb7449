-- Leasehold 1.3 for PostgreSQL: the waiter queue. Safe to run again: it only creates what is missing.
-- One row per waiter (an owner token) of a key, in arrival order: a release hands the key to the
-- first live one, and while a live waiter is queued a free key is granted to it only. A row lives
-- until expires_at_ms (the queue TTL after its owner last asked), so a waiter that crashed holds
-- the queue up for no longer than that; deleted once the waiter's grant was released.
CREATE TABLE IF NOT EXISTS leasehold_waiter (
    lock_key      VARCHAR(255) NOT NULL,
    owner_token   VARCHAR(128) NOT NULL,
    arrived_us    BIGINT       NOT NULL,        -- database time of the first ask that took the place
    expires_at_ms BIGINT       NOT NULL,        -- the place is live while expires_at_ms > now
    holder        VARCHAR(255),                 -- the waiter's holder column, copied into the lease it is handed
    wake          VARCHAR(32),                  -- the waiting store instance (release notifications)
    PRIMARY KEY (lock_key, owner_token)
);

CREATE INDEX IF NOT EXISTS leasehold_waiter_order ON leasehold_waiter (lock_key, arrived_us);
