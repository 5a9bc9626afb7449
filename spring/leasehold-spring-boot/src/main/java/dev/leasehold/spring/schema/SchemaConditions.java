package dev.leasehold.spring.schema;

import org.springframework.boot.autoconfigure.condition.AnyNestedCondition;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnProperty;
import org.springframework.boot.autoconfigure.condition.NoneNestedConditions;

/** Conditions on how Leasehold's tables are created. */
final class SchemaConditions {

    private SchemaConditions() {}

    /** {@code leasehold.jdbc.initialize-schema} is not {@code never}. */
    static final class Initialize extends NoneNestedConditions {
        Initialize() {
            super(ConfigurationPhase.REGISTER_BEAN);
        }

        @ConditionalOnProperty(prefix = "leasehold.jdbc", name = "initialize-schema", havingValue = "never")
        static final class Never {}
    }

    /** Flyway is absent, or Leasehold's Flyway migration is switched off. */
    static final class WithoutFlyway extends AnyNestedCondition {
        WithoutFlyway() {
            super(ConfigurationPhase.REGISTER_BEAN);
        }

        @ConditionalOnMissingClass("org.flywaydb.core.Flyway")
        static final class FlywayMissing {}

        @ConditionalOnProperty(prefix = "leasehold.jdbc.flyway", name = "enabled", havingValue = "false")
        static final class FlywayDisabled {}
    }
}
