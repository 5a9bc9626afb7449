package dev.leasehold.idempotency;

import dev.leasehold.jdbc.Database;

/**
 * Every statement of the request and side-effect records, one constant each, with the condition
 * it implements. {@code {now}} stands for the database clock in epoch ms ({@link
 * Database#nowMillisSql()}); nothing here reads a JVM clock. The same text serves PostgreSQL,
 * MariaDB and H2.
 */
final class Statements {

    // ---------------------------------------------------------------- requests

    /* create: a new request, PROCESSING under the caller's token; the unique (scope, client_key) decides races. */
    static final String INSERT_REQUEST = """
            INSERT INTO leasehold_request (id, scope, client_key, fingerprint, status, lease_token, fence,
                                           created_at_ms, updated_at_ms)
            VALUES (?, ?, ?, ?, 'PROCESSING', ?, 1, {now}, {now})
            """;

    /* read: the request of (scope, client_key), with its age by the database clock. */
    static final String FIND_REQUEST = """
            SELECT id, fingerprint, status, lease_token, fence, response_code, response_body, error_message,
                   updated_at_ms, {now} - updated_at_ms AS age_ms, expires_at_ms, response_bytes,
                   response_content_type, response_headers
              FROM leasehold_request WHERE scope = ? AND client_key = ?
            """;

    /* retry: ERROR -> PROCESSING under a new token and fence, only if still the ERROR record we read. */
    static final String RECLAIM_ERROR = """
            UPDATE leasehold_request
               SET status = 'PROCESSING', lease_token = ?, fence = fence + 1, updated_at_ms = {now},
                   error_message = NULL, expires_at_ms = NULL
             WHERE id = ? AND status = 'ERROR' AND lease_token = ? AND fence = ?
            """;

    /* take-over: a PROCESSING record whose heartbeat is older than the stale threshold gets a new token. */
    static final String TAKE_OVER_REQUEST = """
            UPDATE leasehold_request
               SET lease_token = ?, fence = fence + 1, updated_at_ms = {now}
             WHERE id = ? AND status = 'PROCESSING' AND lease_token = ? AND fence = ? AND updated_at_ms <= {now} - ?
            """;

    /*
     * give-back: a claim that cannot proceed, and so wrote nothing under its fence, restores
     * every field the claim changed: status, token, fence, heartbeat, error text, expiry.
     */
    static final String GIVE_BACK_REQUEST = """
            UPDATE leasehold_request
               SET status = ?, lease_token = ?, fence = fence - 1, updated_at_ms = ?, error_message = ?,
                   expires_at_ms = ?
             WHERE id = ? AND status = 'PROCESSING' AND lease_token = ? AND fence = ?
            """;

    /* heartbeat: only the owner (token and fence), only while PROCESSING. */
    static final String HEARTBEAT_REQUEST = """
            UPDATE leasehold_request SET updated_at_ms = {now}
             WHERE id = ? AND status = 'PROCESSING' AND lease_token = ? AND fence = ?
            """;

    /* ownership, read-only: is the request still PROCESSING under this token and fence? */
    static final String OWNED_REQUEST = """
            SELECT 1 FROM leasehold_request WHERE id = ? AND status = 'PROCESSING' AND lease_token = ? AND fence = ?
            """;

    /*
     * complete: PROCESSING -> SUCCESS with the exact response, only by the owner (token and fence);
     * kept for the retention time. Run in the business write's transaction, it is that write's fence.
     */
    static final String COMPLETE_REQUEST = """
            UPDATE leasehold_request
               SET status = 'SUCCESS', response_code = ?, response_body = NULL, response_bytes = ?,
                   response_content_type = ?, response_headers = ?, updated_at_ms = {now}, expires_at_ms = {now} + ?
             WHERE id = ? AND status = 'PROCESSING' AND lease_token = ? AND fence = ?
            """;

    /* fail: PROCESSING -> ERROR, only by the owner; a later submit of the same key retries. */
    static final String FAIL_REQUEST = """
            UPDATE leasehold_request
               SET status = 'ERROR', error_message = ?, updated_at_ms = {now}, expires_at_ms = {now} + ?
             WHERE id = ? AND status = 'PROCESSING' AND lease_token = ? AND fence = ?
            """;

    /*
     * purge, step 1: ids of completed requests past their retention, and of PROCESSING ones whose
     * heartbeat stopped longer ago than the abandonment bound (crashed executions).
     */
    static final String EXPIRED_REQUESTS = """
            SELECT id FROM leasehold_request
             WHERE (status <> 'PROCESSING' AND expires_at_ms < {now})
                OR (status = 'PROCESSING' AND updated_at_ms < {now} - ?)
             ORDER BY updated_at_ms LIMIT ?
            """;

    /* gauges: how many records, how many PROCESSING, and the oldest PROCESSING heartbeat's age. */
    static final String REQUEST_STATS = """
            SELECT COUNT(*),
                   COALESCE(SUM(CASE WHEN status = 'PROCESSING' THEN 1 ELSE 0 END), 0),
                   {now} - MIN(CASE WHEN status = 'PROCESSING' THEN updated_at_ms END)
              FROM leasehold_request
            """;

    /* purge, step 2: their side effects. */
    static final String DELETE_EFFECTS_OF = "DELETE FROM leasehold_effect WHERE request_id = ?";

    /* purge, step 3: the request, checked again so one re-claimed or renewed meanwhile survives. */
    static final String DELETE_REQUEST = """
            DELETE FROM leasehold_request
             WHERE id = ?
               AND ((status <> 'PROCESSING' AND expires_at_ms < {now})
                    OR (status = 'PROCESSING' AND updated_at_ms < {now} - ?))
            """;

    // ---------------------------------------------------------------- side effects

    /* create: a new side effect, PROCESSING under a fresh token; unique keys decide races. */
    static final String INSERT_EFFECT = """
            INSERT INTO leasehold_effect (id, request_id, effect_name, arguments_hash, effect_key, status,
                                          lease_token, created_at_ms, updated_at_ms)
            VALUES (?, ?, ?, ?, ?, 'PROCESSING', ?, {now}, {now})
            """;

    /* read: the effect of (request, name, arguments), with its age by the database clock. */
    static final String FIND_EFFECT = """
            SELECT id, status, lease_token, result_json, business_id, {now} - updated_at_ms AS age_ms
              FROM leasehold_effect WHERE request_id = ? AND effect_name = ? AND arguments_hash IN (?, ?)
            """;

    /* retry: ERROR -> PROCESSING under a new token, only if still the ERROR record we read. */
    static final String RECLAIM_EFFECT_ERROR = """
            UPDATE leasehold_effect SET status = 'PROCESSING', lease_token = ?, updated_at_ms = {now},
                   error_message = NULL
             WHERE id = ? AND status = 'ERROR' AND lease_token = ?
            """;

    /* take-over: a PROCESSING effect whose heartbeat is older than the stale threshold. */
    static final String TAKE_OVER_EFFECT = """
            UPDATE leasehold_effect SET lease_token = ?, updated_at_ms = {now}
             WHERE id = ? AND status = 'PROCESSING' AND lease_token = ? AND updated_at_ms <= {now} - ?
            """;

    /*
     * ownership, at the end of the effect's transaction: touches the request only if the caller still
     * owns it (token and fence), and locks its row for the short time until the effect and its mark
     * commit; a take-over waits for that commit, then finds a fresh heartbeat.
     */
    static final String ASSERT_REQUEST_OWNER = HEARTBEAT_REQUEST;

    /* success, in the effect's transaction: PROCESSING -> SUCCESS with the result, only by the claimant. */
    static final String MARK_EFFECT_SUCCESS = """
            UPDATE leasehold_effect SET status = 'SUCCESS', result_json = ?, business_id = ?, updated_at_ms = {now}
             WHERE id = ? AND status = 'PROCESSING' AND lease_token = ?
            """;

    /* failure, after the effect's transaction rolled back: PROCESSING -> ERROR, only by the claimant. */
    static final String MARK_EFFECT_ERROR = """
            UPDATE leasehold_effect SET status = 'ERROR', error_message = ?, updated_at_ms = {now}
             WHERE id = ? AND status = 'PROCESSING' AND lease_token = ?
            """;

    /* recovery: the completed effects of a request, oldest first. */
    static final String COMPLETED_EFFECTS = """
            SELECT effect_name, arguments_hash, result_json, business_id FROM leasehold_effect
             WHERE request_id = ? AND status = 'SUCCESS' ORDER BY created_at_ms, id
            """;

    private Statements() {}

    /** The statement with the database's clock in place of {@code {now}}. */
    static String sql(String template, Database database) {
        return template.replace("{now}", database.nowMillisSql());
    }
}
