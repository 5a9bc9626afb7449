-- Durable delayed retries of @Locked(onBusy = RETRY_LATER) calls. Times are epoch milliseconds by
-- the database clock.
CREATE TABLE IF NOT EXISTS leasehold_retry (
    id              VARCHAR(32)   NOT NULL PRIMARY KEY,
    bean_name       VARCHAR(255)  NOT NULL,
    method_name     VARCHAR(255)  NOT NULL,
    parameter_types VARCHAR(2000) NOT NULL,
    arguments_json  CHARACTER LARGE OBJECT NOT NULL,
    lock_key        VARCHAR(255)  NOT NULL,
    attempts        INT           NOT NULL,
    status          VARCHAR(16)   NOT NULL,          -- PENDING, RUNNING, FAILED
    due_at_ms       BIGINT        NOT NULL,
    claimed_at_ms   BIGINT,
    last_error      VARCHAR(1000),
    created_at_ms   BIGINT        NOT NULL
);

CREATE INDEX IF NOT EXISTS leasehold_retry_due ON leasehold_retry (status, due_at_ms);
