package dev.leasehold.idempotency;

/**
 * Writes and reads the JSON of stored side-effect results with the application's own mapper (for
 * example a Jackson 3 {@code JsonMapper}, or a Jackson 2 {@code ObjectMapper}).
 */
public interface JsonCodec {

    /** The JSON text of {@code value} (which may be null). */
    String write(Object value) throws Exception;

    /** {@code json} read as a {@code type}. */
    <T> T read(String json, Class<T> type) throws Exception;
}
