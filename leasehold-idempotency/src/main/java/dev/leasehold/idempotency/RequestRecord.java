package dev.leasehold.idempotency;

import java.time.Duration;

/**
 * A request record as stored, without its token.
 *
 * @param id the record's id
 * @param status PROCESSING, SUCCESS or ERROR
 * @param fence how many times it was claimed
 * @param response the stored response, when SUCCESS
 * @param errorMessage the failure, when ERROR
 * @param sinceHeartbeat time since its last heartbeat, by the database clock
 */
public record RequestRecord(
        String id, String status, long fence, StoredResponse response, String errorMessage, Duration sinceHeartbeat) {}
