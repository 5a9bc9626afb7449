package dev.leasehold.jdbc;

import dev.leasehold.LeaseholdException;

/**
 * The SQL store's tables (or columns of this version) are missing from the database: a
 * configuration error, never a store outage (not a {@code LeaseStoreException}). Its message names what the database reported missing
 * and how to create the schema: {@link JdbcSchema#create} or the Flyway scripts under {@link
 * Database#migrationLocation()}.
 */
public final class SchemaMissingException extends LeaseholdException {
    private static final long serialVersionUID = 1L;

    SchemaMissingException(String message, Throwable cause) {
        super(message, cause);
    }
}
