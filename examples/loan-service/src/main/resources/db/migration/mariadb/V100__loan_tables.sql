-- The credit core's tables (MariaDB). Money is DECIMAL(19,2); every state change of a note is a CAS on
-- (status, version); the unique key of repayment_flow is the last line of defence against double debits.
CREATE TABLE tenant (
    id   VARCHAR(32)  NOT NULL PRIMARY KEY,
    name VARCHAR(100) NOT NULL
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_bin;

CREATE TABLE loan_note (
    tenant_id             VARCHAR(32)   NOT NULL,
    borrow_no             VARCHAR(40)   NOT NULL,
    customer_id           VARCHAR(40)   NOT NULL,
    principal             DECIMAL(19,2) NOT NULL,
    principal_outstanding DECIMAL(19,2) NOT NULL,
    interest_outstanding  DECIMAL(19,2) NOT NULL,
    penalty_outstanding   DECIMAL(19,2) NOT NULL,
    annual_rate           DECIMAL(9,6)  NOT NULL,
    term_months           INT           NOT NULL,
    start_date            DATE          NOT NULL,
    status                VARCHAR(20)   NOT NULL,  -- NORMAL, PARTIALLY_REPAID, SETTLED, OVERDUE, WRITTEN_OFF
    version               BIGINT        NOT NULL,
    PRIMARY KEY (tenant_id, borrow_no)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_bin;

CREATE INDEX loan_note_customer ON loan_note (tenant_id, customer_id);

CREATE TABLE repayment_schedule (
    tenant_id     VARCHAR(32)   NOT NULL,
    borrow_no     VARCHAR(40)   NOT NULL,
    period        INT           NOT NULL,
    due_date      DATE          NOT NULL,
    principal_due DECIMAL(19,2) NOT NULL,
    interest_due  DECIMAL(19,2) NOT NULL,
    PRIMARY KEY (tenant_id, borrow_no, period)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_bin;

-- Every repayment accepted (and later perhaps reversed); one row per channel trade number.
CREATE TABLE repayment_flow (
    id             VARCHAR(32)   NOT NULL PRIMARY KEY,
    tenant_id      VARCHAR(32)   NOT NULL,
    borrow_no      VARCHAR(40)   NOT NULL,
    source_type    VARCHAR(20)   NOT NULL,   -- APP, COUNTER, AUTO_DEBIT, AGGREGATOR
    out_trade_no   VARCHAR(64)   NOT NULL,
    kind           VARCHAR(20)   NOT NULL,   -- REPAYMENT, SETTLEMENT
    amount         DECIMAL(19,2) NOT NULL,
    penalty_part   DECIMAL(19,2) NOT NULL,
    interest_part  DECIMAL(19,2) NOT NULL,
    principal_part DECIMAL(19,2) NOT NULL,
    balance_after  DECIMAL(19,2) NOT NULL,
    status         VARCHAR(16)   NOT NULL,   -- ACCEPTED, REVERSED
    created_at     TIMESTAMP     NOT NULL,
    CONSTRAINT repayment_flow_trade UNIQUE (tenant_id, borrow_no, source_type, out_trade_no)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_bin;

-- Everything that raised or lowered what is owed apart from repayments: interest, penalties, waivers.
CREATE TABLE note_charge (
    id          VARCHAR(32)   NOT NULL PRIMARY KEY,
    tenant_id   VARCHAR(32)   NOT NULL,
    borrow_no   VARCHAR(40)   NOT NULL,
    kind        VARCHAR(20)   NOT NULL,   -- INTEREST, PENALTY, WAIVER
    charge_key  VARCHAR(64)   NOT NULL,   -- e.g. PENALTY:2026-11-29: one penalty per note and day
    amount      DECIMAL(19,2) NOT NULL,   -- signed: a waiver is negative
    note        VARCHAR(200),
    created_at  TIMESTAMP     NOT NULL,
    CONSTRAINT note_charge_key UNIQUE (tenant_id, borrow_no, charge_key)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_bin;
