package dev.leasehold.spring;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.regex.Pattern;
import org.springframework.boot.context.properties.NestedConfigurationProperty;
import org.springframework.util.unit.DataSize;
import org.springframework.validation.Errors;

/** Idempotency settings. */
public class LeaseholdIdempotencyProperties {
    /** How long an in-progress request may go without a heartbeat before a resubmit takes it over. */
    private Duration staleAfter = Duration.ofMinutes(5);
    /** How long completed requests are kept for replay; the scheduled purge deletes them after it. */
    private Duration retention = Duration.ofHours(24);
    /**
     * How long a PROCESSING request may go without a heartbeat before the purge deletes it as
     * abandoned by a crashed execution; empty for the retention.
     */
    private Duration abandonedAfter;
    /** The HTTP header that carries the idempotency key. */
    private String header = "Idempotency-Key";
    /**
     * A request header whose value qualifies the scope of every key as the caller's tenant; empty
     * for none (an @Idempotent tenant expression takes precedence).
     */
    private String tenantHeader;
    /**
     * What a valid tenant looks like (a Java regular expression the whole tenant must match,
     * from the tenant header or an @Idempotent tenant expression); anything else is a 400 problem
     * naming the header. Default: 1 to 64 printable ASCII characters, no space.
     */
    private String tenantPattern = "[!-~]{1,64}";
    /**
     * The largest request body an @Idempotent MVC handler accepts: the body is kept in memory
     * as received, for the fingerprint; a larger one is refused with 413.
     */
    private DataSize maxBodySize = DataSize.ofMegabytes(1);
    /**
     * The response headers stored with an answer and sent again on a replay (case-insensitive);
     * Set-Cookie is never stored.
     */
    private List<String> replayHeaders =
            new ArrayList<>(List.of("Location", "ETag", "Content-Location", "Last-Modified"));
    /**
     * The bean name of the transaction manager @Idempotent methods run in; empty for the
     * application's only (or primary) one.
     */
    private String transactionManager;

    @NestedConfigurationProperty
    private final Purge purge = new Purge();

    public Duration getStaleAfter() {
        return staleAfter;
    }

    public void setStaleAfter(Duration staleAfter) {
        this.staleAfter = staleAfter;
    }

    public Duration getRetention() {
        return retention;
    }

    public void setRetention(Duration retention) {
        this.retention = retention;
    }

    public Duration getAbandonedAfter() {
        return abandonedAfter;
    }

    public void setAbandonedAfter(Duration abandonedAfter) {
        this.abandonedAfter = abandonedAfter;
    }

    public String getHeader() {
        return header;
    }

    public void setHeader(String header) {
        this.header = header;
    }

    public String getTenantHeader() {
        return tenantHeader;
    }

    public void setTenantHeader(String tenantHeader) {
        this.tenantHeader = tenantHeader;
    }

    public DataSize getMaxBodySize() {
        return maxBodySize;
    }

    public void setMaxBodySize(DataSize maxBodySize) {
        this.maxBodySize = maxBodySize;
    }

    public String getTenantPattern() {
        return tenantPattern;
    }

    public void setTenantPattern(String tenantPattern) {
        this.tenantPattern = tenantPattern;
    }

    public List<String> getReplayHeaders() {
        return replayHeaders;
    }

    public void setReplayHeaders(List<String> replayHeaders) {
        this.replayHeaders = replayHeaders;
    }

    public String getTransactionManager() {
        return transactionManager;
    }

    public void setTransactionManager(String transactionManager) {
        this.transactionManager = transactionManager;
    }

    public Purge getPurge() {
        return purge;
    }

    /** Rejects each bad setting, naming the property and the value. */
    void validate(Errors errors) {
        LeaseholdProperties.positive(errors, "idempotency.stale-after", staleAfter);
        LeaseholdProperties.positive(errors, "idempotency.retention", retention);
        if (header == null || header.isBlank()) {
            errors.reject("leasehold.idempotency.header", "leasehold.idempotency.header must not be blank");
        }
        try {
            Pattern.compile(tenantPattern == null ? "" : tenantPattern);
            if (tenantPattern == null || tenantPattern.isEmpty()) {
                errors.reject(
                        "leasehold.idempotency.tenant-pattern",
                        "leasehold.idempotency.tenant-pattern must not be empty");
            }
        } catch (java.util.regex.PatternSyntaxException e) {
            errors.reject(
                    "leasehold.idempotency.tenant-pattern",
                    "leasehold.idempotency.tenant-pattern must be a Java regular expression, was " + tenantPattern
                            + ": " + e.getDescription());
        }
        if (maxBodySize == null || maxBodySize.toBytes() < 1) {
            errors.reject(
                    "leasehold.idempotency.max-body-size",
                    "leasehold.idempotency.max-body-size must be positive, was " + maxBodySize);
        }
        if (abandonedAfter != null) {
            LeaseholdProperties.positive(errors, "idempotency.abandoned-after", abandonedAfter);
        }
        if (replayHeaders == null) {
            errors.reject(
                    "leasehold.idempotency.replay-headers", "leasehold.idempotency.replay-headers must not be null");
        } else {
            for (String name : replayHeaders) {
                String lower = name == null ? "" : name.trim().toLowerCase(Locale.ROOT);
                if (lower.isEmpty() || lower.startsWith("set-cookie")) {
                    errors.reject(
                            "leasehold.idempotency.replay-headers",
                            "leasehold.idempotency.replay-headers must name headers other than Set-Cookie"
                                    + " (a cookie is never replayed to another client), was " + name);
                }
            }
        }
        LeaseholdProperties.positive(errors, "idempotency.purge.interval", purge.interval);
        if (purge.batchSize < 1 || purge.batchSize > 10_000) {
            errors.reject(
                    "leasehold.idempotency.purge.batch-size",
                    "leasehold.idempotency.purge.batch-size must be between 1 and 10000, was " + purge.batchSize);
        }
    }
    /** The scheduled purge of expired request records. */
    public static class Purge {
        /** Whether the purge runs (on the application's TaskScheduler, or one of its own). */
        private boolean enabled = true;
        /** How often it runs. */
        private Duration interval = Duration.ofMinutes(1);
        /** How many records one statement deletes at most; a run repeats until fewer are left. */
        private int batchSize = 500;

        public boolean isEnabled() {
            return enabled;
        }

        public void setEnabled(boolean enabled) {
            this.enabled = enabled;
        }

        public Duration getInterval() {
            return interval;
        }

        public void setInterval(Duration interval) {
            this.interval = interval;
        }

        public int getBatchSize() {
            return batchSize;
        }

        public void setBatchSize(int batchSize) {
            this.batchSize = batchSize;
        }
    }
}
