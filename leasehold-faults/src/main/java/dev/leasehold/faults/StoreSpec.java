package dev.leasehold.faults;

import dev.leasehold.jdbc.Database;
import java.time.Duration;
import javax.sql.DataSource;

/**
 * Which lease store a child JVM opens, as one command-line argument: {@code redis|uri|prefix} for
 * a Redis store, {@code jdbc} for the SQL store on the child's private database.
 */
final class StoreSpec {

    private StoreSpec() {}

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
