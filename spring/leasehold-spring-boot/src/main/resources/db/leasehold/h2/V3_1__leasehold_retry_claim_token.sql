-- The claim of a RUNNING retry: only the instance whose claim it is renews, reschedules or settles
-- the row, so a delivery that lost its claim cannot remove or revive another instance's.
ALTER TABLE leasehold_retry ADD COLUMN IF NOT EXISTS claim_token VARCHAR(36);
