CREATE TABLE note (
    tenant VARCHAR(64) NOT NULL,
    borrow_no VARCHAR(64) NOT NULL,
    outstanding DECIMAL(19, 2) NOT NULL,
    PRIMARY KEY (tenant, borrow_no)
);
INSERT INTO note (tenant, borrow_no, outstanding) VALUES ('demo', 'B1', 1000.00);
