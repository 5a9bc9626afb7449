package dev.leasehold.spring.retry;

import org.springframework.boot.autoconfigure.condition.AnyNestedCondition;
import org.springframework.boot.autoconfigure.condition.ConditionalOnProperty;

/** Conditions on which retry queue Leasehold configures. */
final class RetryQueueConditions {

    private RetryQueueConditions() {}

    /** {@code leasehold.retry.queue} is rabbit or auto. */
    static final class Rabbit extends AnyNestedCondition {
        Rabbit() {
            super(ConfigurationPhase.REGISTER_BEAN);
        }

        @ConditionalOnProperty(prefix = "leasehold.retry", name = "queue", havingValue = "rabbit")
        static final class Chosen {}

        @ConditionalOnProperty(prefix = "leasehold.retry", name = "queue", havingValue = "auto", matchIfMissing = true)
        static final class Auto {}
    }

    /** {@code leasehold.retry.queue} is jdbc or auto (the database is auto's fallback). */
    static final class Jdbc extends AnyNestedCondition {
        Jdbc() {
            super(ConfigurationPhase.REGISTER_BEAN);
        }

        @ConditionalOnProperty(prefix = "leasehold.retry", name = "queue", havingValue = "jdbc")
        static final class Chosen {}

        @ConditionalOnProperty(prefix = "leasehold.retry", name = "queue", havingValue = "auto", matchIfMissing = true)
        static final class Auto {}
    }
}
