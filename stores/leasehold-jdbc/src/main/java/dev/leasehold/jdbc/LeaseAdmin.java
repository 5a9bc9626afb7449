package dev.leasehold.jdbc;

import dev.leasehold.LeaseInfo;
import dev.leasehold.LockKey;
import dev.leasehold.jdbc.SqlDialect.Op;
import dev.leasehold.spi.Grant;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/** The operators' calls of the lease store: inspect one key, list a namespace, force a release. */
final class LeaseAdmin {

    private final StoreCalls calls;

    LeaseAdmin(StoreCalls calls) {
        this.calls = calls;
    }

    /** The unexpired lease of {@code key}, if any. */
    java.util.Optional<LeaseInfo> inspect(LockKey key) {
        return calls.execute("inspect", key, connection -> {
            try (PreparedStatement statement = calls.prepare(connection, Op.INSPECT, Map.of("key", key.render()));
                    ResultSet row = statement.executeQuery()) {
                if (!row.next()) {
                    return java.util.Optional.empty();
                }
                Grant grant = StoreCalls.grant(row);
                return java.util.Optional.of(
                        new LeaseInfo(key, row.getString(1), grant.fence(), grant.remaining(), grant.expiresAt()));
            }
        });
    }

    /** At most {@code limit} unexpired leases of {@code namespace}, in key order. */
    List<LeaseInfo> list(String namespace, int limit) {
        String pattern = namespace.replace("!", "!!").replace("%", "!%").replace("_", "!_") + ":%";
        return calls.execute("list", null, connection -> {
            List<LeaseInfo> leases = new ArrayList<>();
            try (PreparedStatement statement =
                            calls.prepare(connection, Op.LIST, Map.of("pattern", pattern, "limit", limit));
                    ResultSet row = statement.executeQuery()) {
                while (row.next()) {
                    long expiresAt = row.getLong(4);
                    leases.add(new LeaseInfo(
                            LockKey.parse(row.getString(1)),
                            row.getString(2),
                            row.getLong(3),
                            Duration.ofMillis(Math.max(0, expiresAt - row.getLong(5))),
                            Instant.ofEpochMilli(expiresAt)));
                }
            }
            return leases;
        });
    }

    /** Frees the unexpired lease of {@code key} whoever holds it: whether there was one. */
    boolean forceRelease(LockKey key) {
        return calls.execute("force-release", key, connection -> {
            try (PreparedStatement statement =
                    calls.prepare(connection, Op.FORCE_RELEASE, Map.of("key", key.render()))) {
                return calls.changedOneRow(statement);
            }
        });
    }
}
