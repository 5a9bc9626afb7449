-- Leasehold 1.2 for MariaDB: keys and owner tokens compared byte for byte. utf8mb4_bin is a PAD
-- SPACE collation, so 'w1' and 'w1 ' were one owner (the second was granted the first's lease with
-- its fence) and 'K1' and 'K1 ' one fence row; utf8mb4_nopad_bin compares every byte. Safe to run
-- again. Two rows cannot clash: under PAD SPACE no two keys differing only by trailing spaces could
-- exist.
ALTER TABLE leasehold_lease
    MODIFY lock_key VARCHAR(255) CHARACTER SET utf8mb4 COLLATE utf8mb4_nopad_bin NOT NULL,
    MODIFY owner_token VARCHAR(128) CHARACTER SET utf8mb4 COLLATE utf8mb4_nopad_bin NULL,
    DEFAULT CHARACTER SET utf8mb4 COLLATE utf8mb4_nopad_bin;
ALTER TABLE leasehold_fence
    MODIFY resource VARCHAR(255) CHARACTER SET utf8mb4 COLLATE utf8mb4_nopad_bin NOT NULL,
    MODIFY owner_digest VARCHAR(64) CHARACTER SET utf8mb4 COLLATE utf8mb4_nopad_bin NULL,
    DEFAULT CHARACTER SET utf8mb4 COLLATE utf8mb4_nopad_bin;
