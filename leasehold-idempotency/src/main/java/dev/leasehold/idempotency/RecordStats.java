package dev.leasehold.idempotency;

import java.time.Duration;
import java.util.Optional;

/**
 * Counts of the request records, for gauges.
 *
 * @param records how many request records exist
 * @param processing how many of them are PROCESSING
 * @param oldestProcessingAge the time since the oldest PROCESSING record's last heartbeat (database
 *     clock), empty if none
 */
public record RecordStats(long records, long processing, Optional<Duration> oldestProcessingAge) {}
