-- Leasehold 1.3 for H2: the waiter queue. Safe to run again: it only creates what is missing.
-- One row per waiter (an owner token) of a key, in arrival order: a release hands the key to the
-- first live one, and while a live waiter is queued a free key is granted to it only. A row lives
-- until expires_at_ms (the queue TTL after its owner last asked), so a waiter that crashed holds
-- the queue up for no longer than that; 0 once the waiter's grant was released.
CREATE TABLE IF NOT EXISTS leasehold_waiter (
    lock_key      VARCHAR(255) NOT NULL,
    owner_token   VARCHAR(128) NOT NULL,
    arrived_us    BIGINT       NOT NULL,
    expires_at_ms BIGINT       NOT NULL,
    holder        VARCHAR(255),
    wake          VARCHAR(32),
    PRIMARY KEY (lock_key, owner_token)
);

CREATE INDEX IF NOT EXISTS leasehold_waiter_order ON leasehold_waiter (lock_key, arrived_us);
