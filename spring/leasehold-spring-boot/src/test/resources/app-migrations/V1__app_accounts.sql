-- The application's own first migration: the same version number as Leasehold's first one.
CREATE TABLE app_account (
    id      VARCHAR(64) NOT NULL PRIMARY KEY,
    note    VARCHAR(200) NOT NULL,
    balance BIGINT NOT NULL
);
-- A literal with a semicolon and two dashes, which a naive script splitter would cut.
INSERT INTO app_account (id, note, balance) VALUES ('seed', 'a;b -- not a comment', 0);
