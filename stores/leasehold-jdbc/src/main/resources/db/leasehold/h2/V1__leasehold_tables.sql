-- Leasehold lease and fence tables for H2. Times are epoch milliseconds computed by the database
-- clock (CURRENT_TIMESTAMP), never sent by a JVM.
CREATE TABLE IF NOT EXISTS leasehold_lease (
    lock_key       VARCHAR(255) NOT NULL PRIMARY KEY,
    owner_token    VARCHAR(128),
    fence          BIGINT       NOT NULL,
    expires_at_ms  BIGINT       NOT NULL,
    acquired_at_ms BIGINT       NOT NULL,
    holder         VARCHAR(255)
);

CREATE TABLE IF NOT EXISTS leasehold_fence (
    resource VARCHAR(255) NOT NULL PRIMARY KEY,
    fence    BIGINT       NOT NULL
);
