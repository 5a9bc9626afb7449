-- Leasehold request and side-effect records (H2). Times are epoch milliseconds by the database
-- clock. Every transition is a token-checked UPDATE; the unique keys are the last line of defence.
CREATE TABLE IF NOT EXISTS leasehold_request (
    id             VARCHAR(32)  NOT NULL PRIMARY KEY,
    scope          VARCHAR(128) NOT NULL,           -- e.g. a chat session, or tenant + caller
    client_key     VARCHAR(255) NOT NULL,           -- the client's idempotency key
    fingerprint    VARCHAR(64)  NOT NULL,           -- SHA-256 of the canonical payload
    status         VARCHAR(16)  NOT NULL,           -- PROCESSING, SUCCESS, ERROR
    lease_token    VARCHAR(64)  NOT NULL,           -- the current claimant's secret
    fence          BIGINT       NOT NULL,           -- grows with every claim
    response_code  INT,
    response_body  CHARACTER LARGE OBJECT,
    error_message  VARCHAR(1000),
    created_at_ms  BIGINT       NOT NULL,
    updated_at_ms  BIGINT       NOT NULL,           -- heartbeat: staleness is judged on it
    expires_at_ms  BIGINT,                          -- set on completion; purged after it
    CONSTRAINT leasehold_request_key UNIQUE (scope, client_key)
);

CREATE TABLE IF NOT EXISTS leasehold_effect (
    id             VARCHAR(32)  NOT NULL PRIMARY KEY,
    request_id     VARCHAR(32)  NOT NULL,
    effect_name    VARCHAR(100) NOT NULL,
    arguments_hash VARCHAR(64)  NOT NULL,           -- SHA-256 of the canonical JSON arguments
    effect_key     VARCHAR(200) NOT NULL,           -- request_id:effect_name:arguments_hash
    status         VARCHAR(16)  NOT NULL,           -- PROCESSING, SUCCESS, ERROR
    lease_token    VARCHAR(64)  NOT NULL,
    result_json    CHARACTER LARGE OBJECT,
    business_id    VARCHAR(128),                    -- e.g. the ledger transaction id, for recovery
    error_message  VARCHAR(1000),
    created_at_ms  BIGINT       NOT NULL,
    updated_at_ms  BIGINT       NOT NULL,
    CONSTRAINT leasehold_effect_args UNIQUE (request_id, effect_name, arguments_hash),
    CONSTRAINT leasehold_effect_key UNIQUE (effect_key)
);

CREATE INDEX IF NOT EXISTS leasehold_request_expiry ON leasehold_request (expires_at_ms);
