CREATE TABLE IF NOT EXISTS shop_payment (
    id        VARCHAR(36)    NOT NULL PRIMARY KEY,
    account   VARCHAR(64)    NOT NULL,
    amount    DECIMAL(21, 2) NOT NULL,
    booked_by VARCHAR(64)    NOT NULL
);
CREATE TABLE IF NOT EXISTS shop_interest (
    account   VARCHAR(64) NOT NULL,
    value_day DATE        NOT NULL,
    PRIMARY KEY (account, value_day)
);
