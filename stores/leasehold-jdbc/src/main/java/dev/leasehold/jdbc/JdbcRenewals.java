package dev.leasehold.jdbc;

import dev.leasehold.spi.Grant;
import dev.leasehold.spi.Renewal;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * Renews a batch of leases of a {@link JdbcLeaseStore} with one compare-and-extend {@code UPDATE}
 * per lease time among them, by primary key: only a row whose owner is the renewal's and whose
 * lease has not expired gets {@code expires_at_ms = now + lease_ms}. PostgreSQL answers with
 * {@code RETURNING} and H2 from the {@code MERGE}'s final table; MariaDB (no {@code UPDATE ...
 * RETURNING}) reads the rows back after the update, and a row counts as renewed when it has the
 * renewal's owner and a lease that ends after the read (a row the update skipped had ended before
 * it). Thread-safe.
 */
final class JdbcRenewals {

    /** The most leases one statement renews (two parameters each). */
    static final int BATCH_LIMIT = 500;

    private final Database database;

    JdbcRenewals(Database database) {
        this.database = database;
    }

    /** The answers in the batch's order, on {@code connection} (autocommit). */
    List<Optional<Grant>> renew(Connection connection, List<Renewal> batch) throws SQLException {
        Map<Renewal, Optional<Grant>> answers = new HashMap<>();
        Map<Duration, List<Renewal>> byLease = new LinkedHashMap<>();
        for (Renewal renewal : batch) {
            byLease.computeIfAbsent(renewal.leaseFor(), lease -> new ArrayList<>())
                    .add(renewal);
        }
        for (Map.Entry<Duration, List<Renewal>> group : byLease.entrySet()) {
            long millis = group.getKey().toMillis();
            Map<String, Grant> renewed =
                    switch (database) {
                        case POSTGRESQL -> updateReturning(connection, group.getValue(), millis);
                        case H2 -> mergeReturning(connection, group.getValue(), millis);
                        case MARIADB -> updateThenRead(connection, group.getValue(), millis);
                    };
            for (Renewal renewal : group.getValue()) {
                answers.put(
                        renewal, Optional.ofNullable(renewed.get(renewal.key().render() + "\n" + renewal.owner())));
            }
        }
        List<Optional<Grant>> inOrder = new ArrayList<>(batch.size());
        for (Renewal renewal : batch) {
            inOrder.add(answers.get(renewal));
        }
        return inOrder;
    }

    private static String keyList(int size) {
        return String.join(", ", java.util.Collections.nCopies(size, "?"));
    }

    private static String pairList(int size) {
        return String.join(", ", java.util.Collections.nCopies(size, "(?, ?)"));
    }

    /** Binds the keys, then the (key, owner) pairs, from {@code first}; returns the next index. */
    private static int bindKeysAndPairs(PreparedStatement statement, List<Renewal> renewals, int first)
            throws SQLException {
        int index = first;
        for (Renewal renewal : renewals) {
            statement.setString(index++, renewal.key().render());
        }
        for (Renewal renewal : renewals) {
            statement.setString(index++, renewal.key().render());
            statement.setString(index++, renewal.owner());
        }
        return index;
    }

    private Map<String, Grant> updateReturning(Connection connection, List<Renewal> renewals, long millis)
            throws SQLException {
        String sql = "UPDATE leasehold_lease l SET expires_at_ms = c.now_ms + ?"
                + " FROM (SELECT " + database.nowMillisSql() + " AS now_ms) c"
                + " WHERE l.lock_key IN (" + keyList(renewals.size()) + ")"
                + " AND (l.lock_key, l.owner_token) IN (" + pairList(renewals.size()) + ")"
                + " AND l.expires_at_ms > c.now_ms"
                + " RETURNING l.lock_key, l.owner_token, l.fence, l.expires_at_ms, c.now_ms";
        try (PreparedStatement statement = connection.prepareStatement(sql)) {
            statement.setLong(1, millis);
            bindKeysAndPairs(statement, renewals, 2);
            Map<String, Grant> renewed = new HashMap<>();
            try (ResultSet rows = statement.executeQuery()) {
                while (rows.next()) {
                    renewed.put(rows.getString(1) + "\n" + rows.getString(2), grant(rows));
                }
            }
            return renewed;
        }
    }

    /**
     * H2: a {@code MERGE} whose match condition is checked on the row it locks (a plain {@code
     * UPDATE} that waited for a release could extend the freed row), read from its final table. A
     * {@code MERGE} may reach each row once, so a key asked for twice (two owners) goes in a second
     * statement.
     */
    private Map<String, Grant> mergeReturning(Connection connection, List<Renewal> renewals, long millis)
            throws SQLException {
        List<List<Renewal>> rounds = new ArrayList<>();
        List<java.util.Set<String>> roundKeys = new ArrayList<>();
        for (Renewal renewal : renewals) {
            int round = 0;
            while (round < rounds.size()
                    && roundKeys.get(round).contains(renewal.key().render())) {
                round++;
            }
            if (round == rounds.size()) {
                rounds.add(new ArrayList<>());
                roundKeys.add(new java.util.HashSet<>());
            }
            roundKeys.get(round).add(renewal.key().render());
            rounds.get(round).add(renewal);
        }
        Map<String, Grant> renewed = new HashMap<>();
        for (List<Renewal> round : rounds) {
            renewed.putAll(mergeDistinctKeys(connection, round, millis));
        }
        return renewed;
    }

    private Map<String, Grant> mergeDistinctKeys(Connection connection, List<Renewal> renewals, long millis)
            throws SQLException {
        String now = database.nowMillisSql();
        String sql = "SELECT lock_key, owner_token, fence, expires_at_ms, " + now + " AS now_ms FROM FINAL TABLE ("
                + " MERGE INTO leasehold_lease l USING (VALUES "
                + String.join(
                        ", ",
                        java.util.Collections.nCopies(
                                renewals.size(), "(CAST(? AS VARCHAR(255)), CAST(? AS VARCHAR(128)))"))
                + ") AS p(k, o) ON l.lock_key = p.k"
                + " WHEN MATCHED AND l.owner_token = p.o AND l.expires_at_ms > " + now
                + " THEN UPDATE SET expires_at_ms = " + now + " + CAST(? AS BIGINT))";
        try (PreparedStatement statement = connection.prepareStatement(sql)) {
            int index = 1;
            for (Renewal renewal : renewals) {
                statement.setString(index++, renewal.key().render());
                statement.setString(index++, renewal.owner());
            }
            statement.setLong(index, millis);
            Map<String, Grant> renewed = new HashMap<>();
            try (ResultSet rows = statement.executeQuery()) {
                while (rows.next()) {
                    renewed.put(rows.getString(1) + "\n" + rows.getString(2), grant(rows));
                }
            }
            return renewed;
        }
    }

    private Map<String, Grant> updateThenRead(Connection connection, List<Renewal> renewals, long millis)
            throws SQLException {
        String now = database.nowMillisSql();
        String update = "UPDATE leasehold_lease SET expires_at_ms = " + now + " + ?"
                + " WHERE lock_key IN (" + keyList(renewals.size()) + ")"
                + " AND (lock_key, owner_token) IN (" + pairList(renewals.size()) + ")"
                + " AND expires_at_ms > " + now;
        try (PreparedStatement statement = connection.prepareStatement(update)) {
            statement.setLong(1, millis);
            bindKeysAndPairs(statement, renewals, 2);
            statement.executeUpdate();
        }
        String read = "SELECT lock_key, owner_token, fence, expires_at_ms, " + now + " AS now_ms"
                + " FROM leasehold_lease WHERE lock_key IN (" + keyList(renewals.size()) + ")";
        java.util.Set<String> asked = new java.util.HashSet<>(); // key and owner: a batch may hold a key twice
        for (Renewal renewal : renewals) {
            asked.add(renewal.key().render() + "\n" + renewal.owner());
        }
        Map<String, Grant> renewed = new HashMap<>();
        try (PreparedStatement statement = connection.prepareStatement(read)) {
            int index = 1;
            for (Renewal renewal : renewals) {
                statement.setString(index++, renewal.key().render());
            }
            try (ResultSet rows = statement.executeQuery()) {
                while (rows.next()) {
                    String key = rows.getString(1);
                    String owner = rows.getString(2);
                    if (owner != null && asked.contains(key + "\n" + owner) && rows.getLong(4) > rows.getLong(5)) {
                        renewed.put(key + "\n" + owner, grant(rows));
                    }
                }
            }
        }
        return renewed;
    }

    /** The grant of a row: fence, expiry and the database's now, in columns 3 to 5. */
    private static Grant grant(ResultSet row) throws SQLException {
        long fence = row.getLong(3);
        long expiresAt = row.getLong(4);
        long now = row.getLong(5);
        return new Grant(fence, Duration.ofMillis(Math.max(0, expiresAt - now)), Instant.ofEpochMilli(expiresAt));
    }
}
