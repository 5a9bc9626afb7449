package dev.leasehold.idempotency;

import dev.leasehold.jdbc.Database;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.util.Optional;
import javax.sql.DataSource;

/** The rows of {@code leasehold_request}: read one, create one, change one, each in its own transaction. */
final class RequestTable {

    private final DataSource dataSource;
    private final Database database;

    RequestTable(DataSource dataSource, Database database) {
        this.dataSource = dataSource;
        this.database = database;
    }

    DataSource dataSource() {
        return dataSource;
    }

    Database database() {
        return database;
    }

    /** {@code template} for the records' database. */
    String sql(String template) {
        return Statements.sql(template, database);
    }

    /** A request row as read, with its age by the database clock. */
    record Row(
            String id,
            String fingerprint,
            String status,
            String token,
            long fence,
            int responseCode,
            String responseBody,
            String errorMessage,
            long updatedAtMs,
            long ageMs,
            Long expiresAtMs,
            byte[] responseBytes,
            String contentType,
            String headers) {

        StoredResponse response() {
            return StoredResponses.replay(responseCode, responseBody, responseBytes, contentType, headers);
        }
    }

    Optional<Row> read(String scope, String clientKey) {
        return Jdbc.autoCommit(dataSource, "read request", scope + "/" + clientKey, c -> {
            try (PreparedStatement s = c.prepareStatement(sql(Statements.FIND_REQUEST))) {
                s.setString(1, scope);
                s.setString(2, clientKey);
                try (ResultSet rs = s.executeQuery()) {
                    if (!rs.next()) {
                        return Optional.empty();
                    }
                    long expires = rs.getLong(11);
                    Long expiresAt = rs.wasNull() ? null : expires;
                    return Optional.of(new Row(
                            rs.getString(1),
                            rs.getString(2),
                            rs.getString(3),
                            rs.getString(4),
                            rs.getLong(5),
                            rs.getInt(6),
                            rs.getString(7),
                            rs.getString(8),
                            rs.getLong(9),
                            rs.getLong(10),
                            expiresAt,
                            rs.getBytes(12),
                            rs.getString(13),
                            rs.getString(14)));
                }
            }
        });
    }

    /** Creates a PROCESSING row; false if a concurrent twin created the row of this key first. */
    boolean insert(String id, String scope, String clientKey, String fingerprint, String token) {
        return Jdbc.insertUnlessDuplicate(
                dataSource,
                "create request",
                scope + "/" + clientKey,
                sql(Statements.INSERT_REQUEST),
                id,
                scope,
                clientKey,
                fingerprint,
                token);
    }

    /** Runs one UPDATE of the row {@code requestId} with the arguments in order; returns the row count. */
    int update(String operation, String requestId, String template, Object... args) {
        return Jdbc.update(dataSource, operation, requestId, sql(template), args);
    }
}
