package dev.leasehold.faults;

import dev.leasehold.jdbc.Database;
import dev.leasehold.testkit.TestServices;
import java.time.Duration;
import java.util.UUID;
import javax.sql.DataSource;

/**
 * Which lease store a child JVM opens, as one command-line argument: {@code redis|uri|prefix} for
 * a Redis store, {@code jdbc} for the SQL store on the child's private database.
 */
final class StoreSpec {

    private StoreSpec() {}

    /**
     * The lease store of a scenario run on {@code backend}: {@code redis} (the shared Redis under a
     * fresh key prefix), or the SQL store for {@code postgresql} and {@code mariadb}.
     */
    static String forBackend(String backend) {
        if (backend.equals("redis")) {
            return redis(
                    TestServices.redis().uri(),
                    "faults-" + UUID.randomUUID().toString().substring(0, 8) + ":");
        }
        return jdbc();
    }

    /** The database of a scenario run on {@code backend}: MariaDB for {@code mariadb}, else PostgreSQL. */
    static Database database(String backend) {
        return backend.equals("mariadb") ? Database.MARIADB : Database.POSTGRESQL;
    }

    static String redis(String uri, String prefix) {
        return "redis|" + uri + "|" + prefix;
    }

    static String jdbc() {
        return "jdbc";
    }

    static Library.Store open(String spec, DataSource dataSource, Database database) {
        if (spec.equals("jdbc")) {
            return Library.jdbcStore(dataSource, database);
        }
        String[] parts = spec.split("\\|");
        if (parts.length != 3 || !parts[0].equals("redis")) {
            throw new IllegalArgumentException("store must be 'jdbc' or 'redis|uri|prefix', was '" + spec + "'");
        }
        return Library.redisStore(Library.redisUri(parts[1], Duration.ofSeconds(2)), parts[2]);
    }
}
