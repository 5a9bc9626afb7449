-- Leasehold request records, version 2.1 (PostgreSQL): the exact stored response (bytes, content
-- type, headers), versioned fingerprints ('v1:' + SHA-256 hex), and an index for the purge of
-- abandoned PROCESSING records. Safe to run again.
ALTER TABLE leasehold_request ADD COLUMN IF NOT EXISTS response_bytes BYTEA;
ALTER TABLE leasehold_request ADD COLUMN IF NOT EXISTS response_content_type VARCHAR(255);
ALTER TABLE leasehold_request ADD COLUMN IF NOT EXISTS response_headers TEXT;
ALTER TABLE leasehold_request ALTER COLUMN fingerprint TYPE VARCHAR(80);
ALTER TABLE leasehold_effect ALTER COLUMN arguments_hash TYPE VARCHAR(80);
ALTER TABLE leasehold_effect ALTER COLUMN effect_key TYPE VARCHAR(220);
CREATE INDEX IF NOT EXISTS leasehold_request_heartbeat ON leasehold_request (status, updated_at_ms);
