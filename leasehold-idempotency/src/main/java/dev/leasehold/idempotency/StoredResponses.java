package dev.leasehold.idempotency;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.sql.Types;
import java.time.Duration;

/**
 * The response columns of a request row: the SUCCESS mark that stores a response, and the response
 * a replay reads back.
 */
final class StoredResponses {

    private StoredResponses() {}

    /**
     * Marks the request SUCCESS with {@code response} on {@code c}, kept for {@code retention}, if it
     * is still the claim of {@code handle} (token and fence).
     *
     * @param sql the complete statement for the records' database
     * @return the update count: 1, or 0 if the record is no longer this claimant's
     */
    static int markSuccess(Connection c, String sql, RequestHandle handle, StoredResponse response, Duration retention)
            throws SQLException {
        try (PreparedStatement s = c.prepareStatement(sql)) {
            s.setInt(1, response.status());
            byte[] body = response.bodyBytes();
            if (body == null) {
                s.setNull(2, Types.VARBINARY);
            } else {
                s.setBytes(2, body);
            }
            s.setString(3, response.contentType());
            s.setString(4, ResponseHeaders.encode(response.headers()));
            s.setLong(5, retention.toMillis());
            s.setString(6, handle.id());
            s.setString(7, handle.token());
            s.setLong(8, handle.fence());
            return s.executeUpdate();
        }
    }

    /** What a SUCCESS mark that found the record no longer this claimant's throws. */
    static IdempotencyConflictException takenOver(RequestHandle handle) {
        return new IdempotencyConflictException(
                IdempotencyConflictException.Reason.TAKEN_OVER,
                "request " + handle.clientKey() + " was taken over by another execution; its result was not stored");
    }

    /** The stored response, for a replay: the exact bytes, or the text of a row stored before them. */
    static StoredResponse replay(int code, String text, byte[] bytes, String contentType, String headers) {
        if (text != null && bytes == null) {
            return new StoredResponse(code, text); // stored before exact responses
        }
        return StoredResponse.of(code, contentType, ResponseHeaders.decode(headers), bytes);
    }
}
