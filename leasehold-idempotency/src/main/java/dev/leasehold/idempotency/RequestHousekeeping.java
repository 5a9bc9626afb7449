package dev.leasehold.idempotency;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;

/**
 * The operator's side of the request records: purging expired and abandoned records with their side
 * effects, and the counts behind the gauges.
 */
final class RequestHousekeeping {

    private final RequestTable table;
    private final Duration abandonedAfter;

    RequestHousekeeping(RequestTable table, Duration abandonedAfter) {
        this.table = table;
        this.abandonedAfter = abandonedAfter;
    }

    /** See {@link RequestRecords#purgeExpired}. */
    int purgeExpired(int limit) {
        if (limit < 1 || limit > 10_000) {
            throw new IllegalArgumentException("limit must be between 1 and 10000, was " + limit);
        }
        List<String> ids = Jdbc.autoCommit(table.dataSource(), "find expired requests", "(all)", c -> {
            List<String> found = new ArrayList<>();
            try (PreparedStatement s = c.prepareStatement(table.sql(Statements.EXPIRED_REQUESTS))) {
                s.setLong(1, abandonedAfter.toMillis());
                s.setInt(2, limit);
                try (ResultSet rs = s.executeQuery()) {
                    while (rs.next()) {
                        found.add(rs.getString(1));
                    }
                }
            }
            return found;
        });
        int deleted = 0;
        for (String id : ids) {
            deleted += purge(id);
        }
        return deleted;
    }

    /** Deletes the request {@code id} if it is still expired, with its side effects, in one transaction. */
    private int purge(String id) {
        try (Connection c = table.dataSource().getConnection()) {
            boolean autoCommit = c.getAutoCommit();
            c.setAutoCommit(false);
            try (PreparedStatement request = c.prepareStatement(table.sql(Statements.DELETE_REQUEST));
                    PreparedStatement effects = c.prepareStatement(Statements.DELETE_EFFECTS_OF)) {
                request.setString(1, id);
                request.setLong(2, abandonedAfter.toMillis());
                int deleted = request.executeUpdate();
                if (deleted == 1) {
                    effects.setString(1, id);
                    effects.executeUpdate();
                }
                c.commit();
                return deleted;
            } catch (SQLException | RuntimeException e) {
                c.rollback();
                throw e;
            } finally {
                c.setAutoCommit(autoCommit);
            }
        } catch (SQLException e) {
            throw Jdbc.failure("purge request", id, e);
        }
    }

    /** See {@link RequestRecords#stats}. */
    RecordStats stats() {
        return Jdbc.autoCommit(table.dataSource(), "count requests", "(all)", c -> {
            try (PreparedStatement s = c.prepareStatement(table.sql(Statements.REQUEST_STATS));
                    ResultSet rs = s.executeQuery()) {
                rs.next();
                long oldest = rs.getLong(3);
                boolean none = rs.wasNull();
                return new RecordStats(
                        rs.getLong(1),
                        rs.getLong(2),
                        none ? Optional.empty() : Optional.of(Duration.ofMillis(Math.max(0, oldest))));
            }
        });
    }
}
