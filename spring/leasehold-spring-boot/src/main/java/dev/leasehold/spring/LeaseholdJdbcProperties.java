package dev.leasehold.spring;

import java.time.Duration;
import org.springframework.boot.context.properties.NestedConfigurationProperty;
import org.springframework.validation.Errors;

/** SQL settings. */
public class LeaseholdJdbcProperties {
    /**
     * When to create Leasehold's tables at startup. With Flyway on the class path, embedded and
     * always both run Leasehold's own Flyway migration, on every database; never skips it.
     */
    private LeaseholdProperties.SchemaInitialization initializeSchema =
            LeaseholdProperties.SchemaInitialization.EMBEDDED;

    @NestedConfigurationProperty
    private final Flyway flyway = new Flyway();

    @NestedConfigurationProperty
    private final Housekeeping housekeeping = new Housekeeping();

    public Flyway getFlyway() {
        return flyway;
    }

    public Housekeeping getHousekeeping() {
        return housekeeping;
    }

    public LeaseholdProperties.SchemaInitialization getInitializeSchema() {
        return initializeSchema;
    }

    public void setInitializeSchema(LeaseholdProperties.SchemaInitialization initializeSchema) {
        this.initializeSchema = initializeSchema;
    }

    /** Rejects each bad setting, naming the property and the value. */
    void validate(Errors errors) {
        if (flyway.table == null
                || !LeaseholdProperties.TABLE.matcher(flyway.table).matches()) {
            errors.reject(
                    "leasehold.jdbc.flyway.table",
                    "leasehold.jdbc.flyway.table must be a plain SQL name, was " + flyway.table);
        }
        LeaseholdProperties.positive(errors, "jdbc.housekeeping.interval", housekeeping.interval);
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
}
