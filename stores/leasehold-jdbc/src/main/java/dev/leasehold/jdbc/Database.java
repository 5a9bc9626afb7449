package dev.leasehold.jdbc;

import dev.leasehold.jdbc.support.Databases;
import javax.sql.DataSource;

/**
 * The databases the SQL store speaks to, each with its dialect and its schema script (a Flyway
 * migration under {@link #migrationLocation()}).
 */
public enum Database {
    /** PostgreSQL 9.6 or later. */
    POSTGRESQL("postgresql"),
    /** MariaDB 10.5 or later (INSERT ... RETURNING). */
    MARIADB("mariadb"),
    /** H2 2.x, embedded or server. */
    H2("h2");

    private final String id;

    Database(String id) {
        this.id = id;
    }

    /** A short lower-case name, fit for logs and metric tags. */
    public String id() {
        return id;
    }

    /**
     * Where the schema script lies on the class path, for Flyway ({@code classpath:} + this). Run it
     * with its own history table (for example {@code leasehold_schema_history}) so its versions never
     * collide with the application's.
     */
    public String migrationLocation() {
        return "db/leasehold/" + id;
    }

    /**
     * A SQL expression for the current time in epoch milliseconds by the database's clock, fixed for
     * the statement and independent of session and JVM time zones. Other modules use it to judge
     * staleness by the database clock only.
     */
    public String nowMillisSql() {
        return switch (this) {
            case POSTGRESQL -> PostgresDialect.NOW;
            case MARIADB -> MariaDbDialect.NOW;
            case H2 -> H2Dialect.NOW;
        };
    }

    SqlDialect dialect() {
        return switch (this) {
            case POSTGRESQL -> PostgresDialect.SQL;
            case MARIADB -> MariaDbDialect.SQL;
            case H2 -> H2Dialect.SQL;
        };
    }

    /**
     * The database behind a data source, from its JDBC metadata ({@link Databases#detect}).
     *
     * @throws IllegalArgumentException naming the product if it is not supported
     * @throws dev.leasehold.LeaseStoreException if no connection can be had
     */
    public static Database detect(DataSource dataSource) {
        return Databases.detect(dataSource);
    }
}
