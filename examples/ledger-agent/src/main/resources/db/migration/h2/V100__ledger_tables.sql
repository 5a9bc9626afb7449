-- The bookkeeping chat's tables (H2). Money is DECIMAL(19,2).
CREATE TABLE app_user (
    id        VARCHAR(32)  NOT NULL PRIMARY KEY,
    name      VARCHAR(64)  NOT NULL,
    token     VARCHAR(64)  NOT NULL,
    time_zone VARCHAR(64)  NOT NULL,
    CONSTRAINT app_user_token UNIQUE (token)
);

CREATE TABLE ledger (
    id       VARCHAR(32)  NOT NULL PRIMARY KEY,
    name     VARCHAR(100) NOT NULL,
    owner_id VARCHAR(32)  NOT NULL
);

CREATE TABLE ledger_member (
    ledger_id VARCHAR(32) NOT NULL,
    user_id   VARCHAR(32) NOT NULL,
    PRIMARY KEY (ledger_id, user_id)
);

CREATE TABLE category (
    id        VARCHAR(32) NOT NULL PRIMARY KEY,
    ledger_id VARCHAR(32) NOT NULL,
    name      VARCHAR(50) NOT NULL,
    type      VARCHAR(10) NOT NULL,     -- expense, income
    CONSTRAINT category_name UNIQUE (ledger_id, name, type)
);

CREATE TABLE ledger_tx (
    id          VARCHAR(32)   NOT NULL PRIMARY KEY,
    ledger_id   VARCHAR(32)   NOT NULL,
    user_id     VARCHAR(32)   NOT NULL,
    category_id VARCHAR(32)   NOT NULL,
    type        VARCHAR(10)   NOT NULL,
    amount      DECIMAL(19,2) NOT NULL,
    note        VARCHAR(200),
    occurred_on DATE          NOT NULL,
    request_id  VARCHAR(32),             -- the chat request that booked it
    created_at  TIMESTAMP     NOT NULL
);

CREATE TABLE chat_session (
    id         VARCHAR(32)  NOT NULL PRIMARY KEY,
    user_id    VARCHAR(32)  NOT NULL,
    ledger_id  VARCHAR(32)  NOT NULL,
    title      VARCHAR(100) NOT NULL,
    deleted    BOOLEAN      NOT NULL,
    created_at TIMESTAMP    NOT NULL
);

CREATE TABLE chat_message (
    id         VARCHAR(32)   NOT NULL PRIMARY KEY,
    session_id VARCHAR(32)   NOT NULL,
    role       VARCHAR(16)   NOT NULL,   -- user, assistant
    content    VARCHAR(4000) NOT NULL,
    dedupe_key VARCHAR(100)  NOT NULL,   -- user:<request>, reply:<request>: one of each per request (S1.13)
    created_at TIMESTAMP     NOT NULL,
    CONSTRAINT chat_message_dedupe UNIQUE (dedupe_key)
);

CREATE INDEX chat_message_session ON chat_message (session_id, created_at);
