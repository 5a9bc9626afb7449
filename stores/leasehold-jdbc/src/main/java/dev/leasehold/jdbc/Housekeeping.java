package dev.leasehold.jdbc;

import dev.leasehold.jdbc.SqlDialect.Op;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Map;

/**
 * Deletes lease rows long expired and ended places of the waiter queue, for {@link
 * JdbcLeaseStore#deleteExpired}: with one bounded DELETE where the database skips locked rows, or
 * by a non-locking read and then by primary key, in key order and in batches, each row only if it
 * is still expired.
 */
final class Housekeeping {

    private static final int DELETE_BATCH = 100;

    private final StoreCalls calls;

    Housekeeping(StoreCalls calls) {
        this.calls = calls;
    }

    /** Deletes at most {@code limit} expired leases and at most {@code limit} ended places: how many. */
    int deleteExpired(Duration retention, int limit) {
        return deleteExpiredLeases(retention.toMillis(), limit) + deleteEndedPlaces(limit);
    }

    private int deleteExpiredLeases(long retentionMs, int limit) {
        String operation = "delete expired rows";
        if (!calls.dialect.has(Op.EXPIRED_KEYS)) {
            return calls.execute(
                    operation,
                    null,
                    c -> calls.update(c, Op.DELETE_EXPIRED, Map.of("retention_ms", retentionMs, "limit", limit)));
        }
        List<String> keys = calls.execute(operation, null, connection -> {
            List<String> found = new ArrayList<>();
            try (PreparedStatement statement = calls.prepare(
                            connection, Op.EXPIRED_KEYS, Map.of("retention_ms", retentionMs, "limit", limit));
                    ResultSet row = statement.executeQuery()) {
                while (row.next()) {
                    found.add(row.getString(1));
                }
            }
            return found;
        });
        keys.sort(null);
        return deleteInBatches(
                operation, Op.DELETE_EXPIRED, keys, key -> Map.of("key", key, "retention_ms", retentionMs));
    }

    private int deleteEndedPlaces(int limit) {
        String operation = "delete ended places";
        if (!calls.dialect.has(Op.ENDED_PLACES)) {
            return calls.execute(operation, null, c -> calls.update(c, Op.DELETE_ENDED_PLACES, Map.of("limit", limit)));
        }
        List<String[]> places = calls.execute(operation, null, connection -> {
            List<String[]> found = new ArrayList<>();
            try (PreparedStatement statement = calls.prepare(connection, Op.ENDED_PLACES, Map.of("limit", limit));
                    ResultSet row = statement.executeQuery()) {
                while (row.next()) {
                    found.add(new String[] {row.getString(1), row.getString(2)});
                }
            }
            return found;
        });
        places.sort(Comparator.<String[], String>comparing(place -> place[0]).thenComparing(place -> place[1]));
        return deleteInBatches(
                operation, Op.DELETE_ENDED_PLACES, places, place -> Map.of("key", place[0], "owner", place[1]));
    }

    @FunctionalInterface
    private interface Values<T> {
        Map<String, ?> of(T row);
    }

    /** Runs {@code op} for each of the rows, in batches of {@value #DELETE_BATCH}: the rows it changed. */
    private <T> int deleteInBatches(String operation, Op op, List<T> rows, Values<T> values) {
        int deleted = 0;
        for (int from = 0; from < rows.size(); from += DELETE_BATCH) {
            List<T> batch = rows.subList(from, Math.min(rows.size(), from + DELETE_BATCH));
            deleted += calls.execute(operation, null, connection -> {
                try (PreparedStatement statement =
                        connection.prepareStatement(calls.dialect.get(op).sql())) {
                    for (T row : batch) {
                        calls.dialect.get(op).bind(statement, values.of(row));
                        statement.addBatch();
                    }
                    int count = 0;
                    for (int one : statement.executeBatch()) {
                        count += Math.max(0, one);
                    }
                    return count;
                }
            });
        }
        return deleted;
    }
}
