-- Interest is earned per instalment (README, "Money rules"): a schedule line's interest_due is
-- booked when its period begins; until then interest_earned is false and interest_due is 0.
ALTER TABLE repayment_schedule ADD COLUMN interest_earned BOOLEAN NOT NULL DEFAULT FALSE;

-- Only notes marked as demo notes take the demo storm.
ALTER TABLE loan_note ADD COLUMN demo BOOLEAN NOT NULL DEFAULT FALSE;

-- Operator commands (waiver, extension, reversal, write-off) by Idempotency-Key: the key is claimed
-- in the command's own transaction, so the record and the money change commit together or not at all.
CREATE TABLE command_request (
    tenant_id     VARCHAR(32)  NOT NULL,
    idem_key      VARCHAR(100) NOT NULL,
    command       VARCHAR(40)  NOT NULL,
    fingerprint   VARCHAR(600) NOT NULL,
    response_body LONGTEXT        NOT NULL,
    created_at    TIMESTAMP    NOT NULL,
    PRIMARY KEY (tenant_id, idem_key)
);
