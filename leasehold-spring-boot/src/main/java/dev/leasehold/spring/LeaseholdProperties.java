package dev.leasehold.spring;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.regex.Pattern;
import org.springframework.boot.context.properties.ConfigurationProperties;
import org.springframework.util.unit.DataSize;
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

    private static final Pattern TABLE = Pattern.compile("[A-Za-z_][A-Za-z0-9_]{0,62}");
    private static final Pattern ETCD_PREFIX = Pattern.compile("[A-Za-z0-9_.:/\\-]{1,64}");

    /**
     * Where leases live: auto (the DataSource if there is one, else Redis if configured; never
     * memory), redis, jdbc, etcd or memory (one JVM only, chosen explicitly).
     */
    private Backend backend = Backend.AUTO;

    private final Lock lock = new Lock();
    private final Redis redis = new Redis();
    private final Etcd etcd = new Etcd();
    private final Jdbc jdbc = new Jdbc();
    private final Idempotency idempotency = new Idempotency();
    private final Admin admin = new Admin();
    private final StaleScan staleScan = new StaleScan();
    private final Retry retry = new Retry();
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
        positive(errors, "lock.lease-time", p.lock.leaseTime);
        notNegative(errors, "lock.wait-time", p.lock.waitTime);
        positive(errors, "redis.command-timeout", p.redis.commandTimeout);
        if (p.redis.keyPrefix == null || p.redis.keyPrefix.length() > 100) {
            errors.reject(
                    "leasehold.redis.key-prefix",
                    "leasehold.redis.key-prefix must be at most 100 characters, was " + p.redis.keyPrefix);
        }
        positive(errors, "etcd.timeout", p.etcd.timeout);
        if (p.etcd.keyPrefix == null || !ETCD_PREFIX.matcher(p.etcd.keyPrefix).matches()) {
            errors.reject(
                    "leasehold.etcd.key-prefix",
                    "leasehold.etcd.key-prefix must be 1 to 64 letters, digits, '_', '.', ':', '/' or '-', was "
                            + p.etcd.keyPrefix);
        }
        if (p.etcd.endpoints == null) {
            p.etcd.endpoints = new ArrayList<>();
        }
        for (int i = 0; i < p.etcd.endpoints.size(); i++) {
            String problem = endpointProblem(p.etcd.endpoints.get(i));
            if (problem != null) {
                String name = "leasehold.etcd.endpoints[" + i + "]";
                errors.reject(name, name + " " + problem + ", was '" + p.etcd.endpoints.get(i) + "'");
            }
        }
        if (p.jdbc.flyway.table == null || !TABLE.matcher(p.jdbc.flyway.table).matches()) {
            errors.reject(
                    "leasehold.jdbc.flyway.table",
                    "leasehold.jdbc.flyway.table must be a plain SQL name, was " + p.jdbc.flyway.table);
        }
        Housekeeping housekeeping = p.jdbc.housekeeping;
        positive(errors, "jdbc.housekeeping.interval", housekeeping.interval);
        if (housekeeping.retention == null || housekeeping.retention.compareTo(Duration.ofMinutes(1)) < 0) {
            errors.reject(
                    "leasehold.jdbc.housekeeping.retention",
                    "leasehold.jdbc.housekeeping.retention must be at least PT1M, was " + housekeeping.retention);
        }
        if (housekeeping.batchSize < 1 || housekeeping.batchSize > 10_000) {
            errors.reject(
                    "leasehold.jdbc.housekeeping.batch-size",
                    "leasehold.jdbc.housekeeping.batch-size must be between 1 and 10000, was "
                            + housekeeping.batchSize);
        }
        positive(errors, "idempotency.stale-after", p.idempotency.staleAfter);
        positive(errors, "idempotency.retention", p.idempotency.retention);
        if (p.idempotency.header == null || p.idempotency.header.isBlank()) {
            errors.reject("leasehold.idempotency.header", "leasehold.idempotency.header must not be blank");
        }
        try {
            Pattern.compile(p.idempotency.tenantPattern == null ? "" : p.idempotency.tenantPattern);
            if (p.idempotency.tenantPattern == null || p.idempotency.tenantPattern.isEmpty()) {
                errors.reject(
                        "leasehold.idempotency.tenant-pattern",
                        "leasehold.idempotency.tenant-pattern must not be empty");
            }
        } catch (java.util.regex.PatternSyntaxException e) {
            errors.reject(
                    "leasehold.idempotency.tenant-pattern",
                    "leasehold.idempotency.tenant-pattern must be a Java regular expression, was "
                            + p.idempotency.tenantPattern + ": " + e.getDescription());
        }
        if (p.idempotency.maxBodySize == null || p.idempotency.maxBodySize.toBytes() < 1) {
            errors.reject(
                    "leasehold.idempotency.max-body-size",
                    "leasehold.idempotency.max-body-size must be positive, was " + p.idempotency.maxBodySize);
        }
        if (p.idempotency.abandonedAfter != null) {
            positive(errors, "idempotency.abandoned-after", p.idempotency.abandonedAfter);
        }
        if (p.idempotency.replayHeaders == null) {
            errors.reject(
                    "leasehold.idempotency.replay-headers", "leasehold.idempotency.replay-headers must not be null");
        } else {
            for (String name : p.idempotency.replayHeaders) {
                String lower = name == null ? "" : name.trim().toLowerCase(Locale.ROOT);
                if (lower.isEmpty() || lower.startsWith("set-cookie")) {
                    errors.reject(
                            "leasehold.idempotency.replay-headers",
                            "leasehold.idempotency.replay-headers must name headers other than Set-Cookie"
                                    + " (a cookie is never replayed to another client), was " + name);
                }
            }
        }
        positive(errors, "idempotency.purge.interval", p.idempotency.purge.interval);
        if (p.idempotency.purge.batchSize < 1 || p.idempotency.purge.batchSize > 10_000) {
            errors.reject(
                    "leasehold.idempotency.purge.batch-size",
                    "leasehold.idempotency.purge.batch-size must be between 1 and 10000, was "
                            + p.idempotency.purge.batchSize);
        }
        if (p.admin.role == null || p.admin.role.isBlank()) {
            errors.reject("leasehold.admin.role", "leasehold.admin.role must not be blank");
        }
        positive(errors, "stale-scan.interval", p.staleScan.interval);
        if (p.staleScan.leaseMultiple < 2) {
            errors.reject(
                    "leasehold.stale-scan.lease-multiple",
                    "leasehold.stale-scan.lease-multiple must be >= 2, was " + p.staleScan.leaseMultiple);
        }
        positive(errors, "retry.poll-interval", p.retry.pollInterval);
        positive(errors, "retry.initial-delay", p.retry.initialDelay);
        positive(errors, "retry.max-delay", p.retry.maxDelay);
        positive(errors, "retry.claim-timeout", p.retry.claimTimeout);
        if (p.retry.maxDelay != null
                && p.retry.initialDelay != null
                && p.retry.maxDelay.compareTo(p.retry.initialDelay) < 0) {
            errors.reject(
                    "leasehold.retry.max-delay",
                    "leasehold.retry.max-delay (" + p.retry.maxDelay
                            + ") must not be below leasehold.retry.initial-delay (" + p.retry.initialDelay + ")");
        }
        if (p.retry.maxAttempts < 1) {
            errors.reject(
                    "leasehold.retry.max-attempts",
                    "leasehold.retry.max-attempts must be >= 1, was " + p.retry.maxAttempts);
        }
        if (p.retry.rabbitQueuePrefix == null || p.retry.rabbitQueuePrefix.isBlank()) {
            errors.reject(
                    "leasehold.retry.rabbit-queue-prefix", "leasehold.retry.rabbit-queue-prefix must not be blank");
        }
        positive(errors, "health.timeout", p.health.timeout);
    }

    /** What is wrong with an etcd client URL, or null if it is an http(s) URL with a host and a port. */
    private static String endpointProblem(String endpoint) {
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

    private static void positive(Errors errors, String name, Duration value) {
        if (value == null || value.isNegative() || value.isZero()) {
            errors.reject("leasehold." + name, "leasehold." + name + " must be > 0, was " + value);
        }
    }

    private static void notNegative(Errors errors, String name, Duration value) {
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

    public Lock getLock() {
        return lock;
    }

    public Redis getRedis() {
        return redis;
    }

    public Etcd getEtcd() {
        return etcd;
    }

    public Jdbc getJdbc() {
        return jdbc;
    }

    public Idempotency getIdempotency() {
        return idempotency;
    }

    public Admin getAdmin() {
        return admin;
    }

    public StaleScan getStaleScan() {
        return staleScan;
    }

    public Retry getRetry() {
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

    /** Lock defaults. */
    public static class Lock {
        /** Default lease time of {@code @Locked} methods (renewed while the method runs). */
        private Duration leaseTime = Duration.ofSeconds(30);
        /** Default time {@code @Locked} methods wait for a busy key; 0 answers busy at once. */
        private Duration waitTime = Duration.ZERO;
        /** enforce, or bypass to rely on the database safety net alone; changeable at runtime. */
        private Mode mode = Mode.ENFORCE;
        /** Whether waiters in one JVM are served in arrival order. */
        private boolean fair = true;
        /**
         * Order of the {@code @Locked} advisor (default {@code Ordered.HIGHEST_PRECEDENCE + 200}); it must
         * run before (be lower than) the transaction advisor's, which startup checks.
         */
        private int advisorOrder = LeaseholdAutoConfiguration.LOCKED_ORDER;

        public int getAdvisorOrder() {
            return advisorOrder;
        }

        public void setAdvisorOrder(int advisorOrder) {
            this.advisorOrder = advisorOrder;
        }

        public Duration getLeaseTime() {
            return leaseTime;
        }

        public void setLeaseTime(Duration leaseTime) {
            this.leaseTime = leaseTime;
        }

        public Duration getWaitTime() {
            return waitTime;
        }

        public void setWaitTime(Duration waitTime) {
            this.waitTime = waitTime;
        }

        public Mode getMode() {
            return mode;
        }

        public void setMode(Mode mode) {
            this.mode = mode;
        }

        public boolean isFair() {
            return fair;
        }

        public void setFair(boolean fair) {
            this.fair = fair;
        }
    }

    /** Redis settings, used when no Lettuce client bean or connection factory is available. */
    public static class Redis {
        /** Redis URI (redis://host:port) for a client Leasehold creates itself. */
        private String url;
        /** Prefix of every Redis key and channel Leasehold writes. */
        private String keyPrefix = "leasehold:";
        /** Command timeout of the client Leasehold creates from the URL, so callers fail fast when Redis hangs. */
        private Duration commandTimeout = Duration.ofSeconds(2);

        public Duration getCommandTimeout() {
            return commandTimeout;
        }

        public void setCommandTimeout(Duration commandTimeout) {
            this.commandTimeout = commandTimeout;
        }

        public String getUrl() {
            return url;
        }

        public void setUrl(String url) {
            this.url = url;
        }

        public String getKeyPrefix() {
            return keyPrefix;
        }

        public void setKeyPrefix(String keyPrefix) {
            this.keyPrefix = keyPrefix;
        }
    }

    /** etcd settings; the endpoints are used when the application has no {@code io.etcd.jetcd.Client} bean. */
    public static class Etcd {
        /**
         * Client URLs of the etcd members (http://host:port or https://host:port) for a client
         * Leasehold creates itself and closes on shutdown.
         */
        private List<String> endpoints = new ArrayList<>();
        /** Prefix of every etcd key Leasehold writes: 1 to 64 letters, digits and _ . : / -. */
        private String keyPrefix = "leasehold/";
        /**
         * How long one etcd call, and connecting, may take before the caller gets an error; keep it
         * shorter than the leases.
         */
        private Duration timeout = Duration.ofSeconds(5);

        public List<String> getEndpoints() {
            return endpoints;
        }

        public void setEndpoints(List<String> endpoints) {
            this.endpoints = endpoints;
        }

        public String getKeyPrefix() {
            return keyPrefix;
        }

        public void setKeyPrefix(String keyPrefix) {
            this.keyPrefix = keyPrefix;
        }

        public Duration getTimeout() {
            return timeout;
        }

        public void setTimeout(Duration timeout) {
            this.timeout = timeout;
        }
    }

    /** SQL settings. */
    public static class Jdbc {
        /**
         * When to create Leasehold's tables at startup. With Flyway on the class path, embedded and
         * always both run Leasehold's own Flyway migration, on every database; never skips it.
         */
        private SchemaInitialization initializeSchema = SchemaInitialization.EMBEDDED;

        private final Flyway flyway = new Flyway();

        private final Housekeeping housekeeping = new Housekeeping();

        public Flyway getFlyway() {
            return flyway;
        }

        public Housekeeping getHousekeeping() {
            return housekeeping;
        }

        public SchemaInitialization getInitializeSchema() {
            return initializeSchema;
        }

        public void setInitializeSchema(SchemaInitialization initializeSchema) {
            this.initializeSchema = initializeSchema;
        }
    }

    /** Deleting the SQL lease store's ended rows. */
    public static class Housekeeping {
        /** Whether ended lease rows and queue places are deleted (on the SQL lease store only). */
        private boolean enabled = true;
        /** How often it runs. */
        private Duration interval = Duration.ofMinutes(5);
        /** How long after its lease ended a row is kept; at least one minute. */
        private Duration retention = Duration.ofHours(1);
        /** How many rows one statement deletes at most (1 to 10000); a run repeats until fewer are left. */
        private int batchSize = 1000;

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

        public Duration getRetention() {
            return retention;
        }

        public void setRetention(Duration retention) {
            this.retention = retention;
        }

        public int getBatchSize() {
            return batchSize;
        }

        public void setBatchSize(int batchSize) {
            this.batchSize = batchSize;
        }
    }

    /** Leasehold's own Flyway migration, used when Flyway is on the class path. */
    public static class Flyway {
        /** Whether to migrate Leasehold's tables with Flyway (else Spring Boot's script initializer). */
        private boolean enabled = true;
        /** The history table of Leasehold's migrations, apart from the application's. */
        private String table = "leasehold_schema_history";

        public boolean isEnabled() {
            return enabled;
        }

        public void setEnabled(boolean enabled) {
            this.enabled = enabled;
        }

        public String getTable() {
            return table;
        }

        public void setTable(String table) {
            this.table = table;
        }
    }

    /** Idempotency settings. */
    public static class Idempotency {
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

    /** The scan for leases held far beyond their lease time. */
    public static class StaleScan {
        /** Whether to scan. */
        private boolean enabled = true;
        /** How often to scan. */
        private Duration interval = Duration.ofMinutes(1);
        /** A lease held longer than this many lease times is reported. */
        private int leaseMultiple = 10;

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

        public int getLeaseMultiple() {
            return leaseMultiple;
        }

        public void setLeaseMultiple(int leaseMultiple) {
            this.leaseMultiple = leaseMultiple;
        }
    }

    /** Delayed retries of background {@code @Locked(onBusy = RETRY_LATER)} calls. */
    public static class Retry {
        /**
         * Whether retries are delivered: unset to deliver only when some bean has a RETRY_LATER
         * method (no polling otherwise), true to always deliver, false to never (RETRY_LATER then fails).
         */
        private Boolean enabled;
        /** Where retries wait: auto (RabbitMQ when Spring AMQP and a connection factory are present, else the database), jdbc or rabbit. */
        private Queue queue = Queue.AUTO;
        /** How often the database queue looks for due retries. */
        private Duration pollInterval = Duration.ofSeconds(1);
        /** The delay before the first retry; doubled for every further one. */
        private Duration initialDelay = Duration.ofSeconds(2);
        /** The longest delay between retries. */
        private Duration maxDelay = Duration.ofMinutes(5);
        /** After this many busy attempts the retry is parked for an operator. */
        private int maxAttempts = 20;
        /**
         * After how long without a renewal a retry's claim counts as abandoned (its instance died) and
         * the retry is delivered again (database queue); a running retry renews it every third of this.
         */
        private Duration claimTimeout = Duration.ofMinutes(5);
        /** The prefix of the RabbitMQ queues ({@code <prefix>.due}, {@code <prefix>.parked}, {@code <prefix>.delay.<ms>}). */
        private String rabbitQueuePrefix = "leasehold.retry";

        /** Where retries wait. */
        public enum Queue {
            /** RabbitMQ when Spring AMQP and a connection factory are present, else the database. */
            AUTO,
            /** The {@code leasehold_retry} table. */
            JDBC,
            /** RabbitMQ queues with per-queue TTL and dead-lettering. */
            RABBIT
        }

        public Boolean getEnabled() {
            return enabled;
        }

        public void setEnabled(Boolean enabled) {
            this.enabled = enabled;
        }

        public Queue getQueue() {
            return queue;
        }

        public void setQueue(Queue queue) {
            this.queue = queue;
        }

        public Duration getPollInterval() {
            return pollInterval;
        }

        public void setPollInterval(Duration pollInterval) {
            this.pollInterval = pollInterval;
        }

        public Duration getInitialDelay() {
            return initialDelay;
        }

        public void setInitialDelay(Duration initialDelay) {
            this.initialDelay = initialDelay;
        }

        public Duration getMaxDelay() {
            return maxDelay;
        }

        public void setMaxDelay(Duration maxDelay) {
            this.maxDelay = maxDelay;
        }

        public int getMaxAttempts() {
            return maxAttempts;
        }

        public void setMaxAttempts(int maxAttempts) {
            this.maxAttempts = maxAttempts;
        }

        public Duration getClaimTimeout() {
            return claimTimeout;
        }

        public void setClaimTimeout(Duration claimTimeout) {
            this.claimTimeout = claimTimeout;
        }

        public String getRabbitQueuePrefix() {
            return rabbitQueuePrefix;
        }

        public void setRabbitQueuePrefix(String rabbitQueuePrefix) {
            this.rabbitQueuePrefix = rabbitQueuePrefix;
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
