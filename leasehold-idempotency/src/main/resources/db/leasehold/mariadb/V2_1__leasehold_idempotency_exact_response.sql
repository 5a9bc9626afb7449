-- Leasehold request records, version 2.1 (MariaDB): the exact stored response (bytes, content
-- type, headers), versioned fingerprints ('v1:' + SHA-256 hex), an index for the purge of abandoned
-- PROCESSING records, and binary NO PAD comparison of keys: utf8mb4_bin pads with spaces, so 'K1'
-- and 'K1 ' were one key; utf8mb4_nopad_bin compares every byte. Safe to run again.
ALTER TABLE leasehold_request
    ADD COLUMN IF NOT EXISTS response_bytes LONGBLOB,
    ADD COLUMN IF NOT EXISTS response_content_type VARCHAR(255) CHARACTER SET utf8mb4 COLLATE utf8mb4_nopad_bin,
    ADD COLUMN IF NOT EXISTS response_headers LONGTEXT CHARACTER SET utf8mb4 COLLATE utf8mb4_nopad_bin,
    MODIFY scope VARCHAR(128) CHARACTER SET utf8mb4 COLLATE utf8mb4_nopad_bin NOT NULL,
    MODIFY client_key VARCHAR(255) CHARACTER SET utf8mb4 COLLATE utf8mb4_nopad_bin NOT NULL,
    MODIFY fingerprint VARCHAR(80) CHARACTER SET utf8mb4 COLLATE utf8mb4_nopad_bin NOT NULL,
    MODIFY lease_token VARCHAR(64) CHARACTER SET utf8mb4 COLLATE utf8mb4_nopad_bin NOT NULL;
ALTER TABLE leasehold_effect
    MODIFY effect_name VARCHAR(100) CHARACTER SET utf8mb4 COLLATE utf8mb4_nopad_bin NOT NULL,
    MODIFY arguments_hash VARCHAR(80) CHARACTER SET utf8mb4 COLLATE utf8mb4_nopad_bin NOT NULL,
    MODIFY effect_key VARCHAR(220) CHARACTER SET utf8mb4 COLLATE utf8mb4_nopad_bin NOT NULL,
    MODIFY lease_token VARCHAR(64) CHARACTER SET utf8mb4 COLLATE utf8mb4_nopad_bin NOT NULL;
CREATE INDEX IF NOT EXISTS leasehold_request_heartbeat ON leasehold_request (status, updated_at_ms);
