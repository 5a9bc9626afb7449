package dev.leasehold.faults;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.util.UUID;

/**
 * The business row of the service scenarios: one booking (a payment, a repayment) with a fresh
 * receipt, in a table with columns {@code request_key, account, amount, receipt}. No unique key on
 * {@code request_key}: a request booked twice must show as two rows.
 */
final class Bookings {

    private Bookings() {}

    /** The DDL of a bookings table. */
    static String createTable(String table) {
        return "CREATE TABLE " + table + " (request_key VARCHAR(64) NOT NULL, account VARCHAR(64) NOT NULL,"
                + " amount BIGINT NOT NULL, receipt VARCHAR(64) NOT NULL)";
    }

    /** Books on the caller's transaction; returns the receipt. */
    static String book(Connection tx, String table, String key, String account, long amount) throws SQLException {
        String receipt = UUID.randomUUID().toString();
        try (PreparedStatement insert = tx.prepareStatement(
                "INSERT INTO " + table + " (request_key, account, amount, receipt) VALUES (?, ?, ?, ?)")) {
            insert.setString(1, key);
            insert.setString(2, account);
            insert.setLong(3, amount);
            insert.setString(4, receipt);
            insert.executeUpdate();
        }
        return receipt;
    }
}
