-- Leasehold lease and fence tables for MariaDB. Times are epoch milliseconds computed by the
-- database clock (UTC_TIMESTAMP(6)), never sent by a JVM, so session and JVM time zones do not matter.
CREATE TABLE IF NOT EXISTS leasehold_lease (
    lock_key       VARCHAR(255) NOT NULL PRIMARY KEY,
    owner_token    VARCHAR(128),                 -- NULL once released
    fence          BIGINT       NOT NULL,        -- only grows; seeded from the clock when the row is created
    expires_at_ms  BIGINT       NOT NULL,        -- the lease is held while expires_at_ms > now; 0 once released
    acquired_at_ms BIGINT       NOT NULL,
    holder         VARCHAR(255)                  -- host and process of the holder, for operators
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_bin;

-- Highest fence accepted per guarded resource (FencedUpdate).
CREATE TABLE IF NOT EXISTS leasehold_fence (
    resource VARCHAR(255) NOT NULL PRIMARY KEY,
    fence    BIGINT       NOT NULL
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_bin;
