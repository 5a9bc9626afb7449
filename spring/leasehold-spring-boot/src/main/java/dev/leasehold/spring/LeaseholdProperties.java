package dev.leasehold.spring;

import java.time.Duration;
import java.util.Locale;
import java.util.regex.Pattern;
import org.springframework.boot.context.properties.ConfigurationProperties;
import org.springframework.boot.context.properties.NestedConfigurationProperty;
import org.springframework.validation.Errors;
import org.springframework.validation.Validator;
import org.springframework.validation.annotation.Validated;

/**
 * Leasehold's settings, under {@code leasehold.*}. Validated when bound: a bad value fails startup
 * with the property's name and the value ({@link #validate}).
 */
@ConfigurationProperties("leasehold")
@Validated
public class LeaseholdProperties implements Validator {

    static final Pattern TABLE = Pattern.compile("[A-Za-z_][A-Za-z0-9_]{0,62}");

    /**
     * Where leases live: auto (the DataSource if there is one, else Redis if configured; never
     * memory), redis, jdbc, etcd or memory (one JVM only, chosen explicitly).
     */
    private Backend backend = Backend.AUTO;

    @NestedConfigurationProperty
    private final LeaseholdLockProperties lock = new LeaseholdLockProperties();

    @NestedConfigurationProperty
    private final LeaseholdRedisProperties redis = new LeaseholdRedisProperties();

    @NestedConfigurationProperty
    private final LeaseholdEtcdProperties etcd = new LeaseholdEtcdProperties();

    @NestedConfigurationProperty
    private final LeaseholdJdbcProperties jdbc = new LeaseholdJdbcProperties();

    @NestedConfigurationProperty
    private final LeaseholdIdempotencyProperties idempotency = new LeaseholdIdempotencyProperties();

    private final Admin admin = new Admin();

    @NestedConfigurationProperty
    private final LeaseholdStaleScanProperties staleScan = new LeaseholdStaleScanProperties();

    @NestedConfigurationProperty
    private final LeaseholdRetryProperties retry = new LeaseholdRetryProperties();

    private final Audit audit = new Audit();
    private final Health health = new Health();

    @Override
    public boolean supports(Class<?> type) {
        return LeaseholdProperties.class.isAssignableFrom(type);
    }

    /** Checks every setting; each error names the property and the value. */
    @Override
    public void validate(Object target, Errors errors) {
        LeaseholdProperties p = (LeaseholdProperties) target;
        p.lock.validate(errors);
        p.redis.validate(errors);
        p.etcd.validate(errors);
        p.jdbc.validate(errors);
        p.idempotency.validate(errors);
        if (p.admin.role == null || p.admin.role.isBlank()) {
            errors.reject("leasehold.admin.role", "leasehold.admin.role must not be blank");
        }
        p.staleScan.validate(errors);
        p.retry.validate(errors);
        positive(errors, "health.timeout", p.health.timeout);
    }

    /** What is wrong with an etcd client URL, or null if it is an http(s) URL with a host and a port. */
    static String endpointProblem(String endpoint) {
        if (endpoint == null || endpoint.isBlank()) {
            return "must be an http:// or https:// URL with host and port";
        }
        java.net.URI uri;
        try {
            uri = new java.net.URI(endpoint.trim());
        } catch (java.net.URISyntaxException e) {
            return "is not a URL (" + e.getReason() + ")";
        }
        String scheme = uri.getScheme() == null ? "" : uri.getScheme().toLowerCase(Locale.ROOT);
        if (!scheme.equals("http") && !scheme.equals("https")) {
            return "must start with http:// or https://";
        }
        if (uri.getHost() == null || uri.getPort() < 0) {
            return "must name a host and a port (http://host:port)";
        }
        return null;
    }

    static void positive(Errors errors, String name, Duration value) {
        if (value == null || value.isNegative() || value.isZero()) {
            errors.reject("leasehold." + name, "leasehold." + name + " must be > 0, was " + value);
        }
    }

    static void notNegative(Errors errors, String name, Duration value) {
        if (value == null || value.isNegative()) {
            errors.reject("leasehold." + name, "leasehold." + name + " must be >= 0, was " + value);
        }
    }

    /** The lease stores to choose from. */
    public enum Backend {
        /** The DataSource if there is one, else Redis if a client or URL is configured; startup fails otherwise. */
        AUTO,
        /** Redis through Lettuce. */
        REDIS,
        /** etcd through jetcd: {@code leasehold.etcd.endpoints} or an application's jetcd client. */
        ETCD,
        /** The application's SQL database. */
        JDBC,
        /** One JVM only: tests and single-instance tools. */
        MEMORY
    }

    /** Whether {@code @Locked} takes locks. */
    public enum Mode {
        /** Take locks (the default). */
        ENFORCE,
        /** Skip locks and rely on the database safety net alone: logged and counted. */
        BYPASS
    }

    /** When to create Leasehold's tables at startup. */
    public enum SchemaInitialization {
        /** Only on an embedded database (H2). */
        EMBEDDED,
        /** Always (the scripts only create what is missing). */
        ALWAYS,
        /** Never: Flyway or the DBA does it (scripts under {@code db/leasehold/<vendor>}). */
        NEVER
    }

    public Backend getBackend() {
        return backend;
    }

    public void setBackend(Backend backend) {
        this.backend = backend;
    }

    public LeaseholdLockProperties getLock() {
        return lock;
    }

    public LeaseholdRedisProperties getRedis() {
        return redis;
    }

    public LeaseholdEtcdProperties getEtcd() {
        return etcd;
    }

    public LeaseholdJdbcProperties getJdbc() {
        return jdbc;
    }

    public LeaseholdIdempotencyProperties getIdempotency() {
        return idempotency;
    }

    public Admin getAdmin() {
        return admin;
    }

    public LeaseholdStaleScanProperties getStaleScan() {
        return staleScan;
    }

    public LeaseholdRetryProperties getRetry() {
        return retry;
    }

    public Audit getAudit() {
        return audit;
    }

    public Health getHealth() {
        return health;
    }

    /** The lease-store health indicator ({@code /actuator/health/leasehold}). */
    public static class Health {
        /** How long the probe may take before the store is reported DOWN. */
        private Duration timeout = Duration.ofSeconds(2);

        public Duration getTimeout() {
            return timeout;
        }

        public void setTimeout(Duration timeout) {
            this.timeout = timeout;
        }
    }

    /** Operations endpoint settings. */
    public static class Admin {
        /** The role a caller needs for write operations (force-release, mode switch). */
        private String role = "LEASEHOLD_ADMIN";

        public String getRole() {
            return role;
        }

        public void setRole(String role) {
            this.role = role;
        }
    }

    /** The audit log. */
    public static class Audit {
        /** Whether to write one line per acquire, busy, release, loss and force-release to logger {@code leasehold.audit}. */
        private boolean enabled = true;

        public boolean isEnabled() {
            return enabled;
        }

        public void setEnabled(boolean enabled) {
            this.enabled = enabled;
        }
    }
}
