-- Test-only migration: proves that a later file joins Leasehold's sequence, and that a literal
-- holding a semicolon and two dashes survives the script runner.
CREATE TABLE IF NOT EXISTS leasehold_test_literal (id INT NOT NULL PRIMARY KEY, text VARCHAR(100) NOT NULL);
MERGE INTO leasehold_test_literal (id, text) KEY (id) VALUES (1, 'a;b -- not a comment');
