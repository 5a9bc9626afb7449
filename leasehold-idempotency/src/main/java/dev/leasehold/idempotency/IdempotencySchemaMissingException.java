package dev.leasehold.idempotency;

import dev.leasehold.LeaseholdException;

/**
 * A table of the request and side-effect records does not exist: the database was reached, but the
 * Leasehold migration that creates the table has not run. Not an outage: retrying will not help.
 */
public class IdempotencySchemaMissingException extends LeaseholdException {
    private static final long serialVersionUID = 1L;

    /** The script that creates the records' tables, under {@code db/leasehold/<vendor>}. */
    public static final String MIGRATION = "V2__leasehold_idempotency.sql";

    /** The latest script of the records' tables (columns of the exact response, NO PAD keys). */
    public static final String LATEST_MIGRATION = "V2_1__leasehold_idempotency_exact_response.sql";

    private final String table;
    private final String migration;

    /**
     * The table {@code table} is missing ({@code newerMigration} null), or a column that {@code
     * newerMigration} adds is.
     */
    public IdempotencySchemaMissingException(String table, String newerMigration, Throwable cause) {
        super(
                (newerMigration == null
                                ? "table " + table + " does not exist: run the Leasehold migration " + MIGRATION
                                        + " and the later ones"
                                : "table " + table + " lacks a column: run the Leasehold migration " + newerMigration)
                        + " from db/leasehold/<database> on the class path (with Flyway, Leasehold's schema"
                        + " initializer or IdempotencySchema.create); cause: " + cause,
                cause);
        this.table = table;
        this.migration = newerMigration == null ? MIGRATION : newerMigration;
    }

    /** The missing table. */
    public String table() {
        return table;
    }

    /** The migration that creates what is missing. */
    public String migration() {
        return migration;
    }
}
