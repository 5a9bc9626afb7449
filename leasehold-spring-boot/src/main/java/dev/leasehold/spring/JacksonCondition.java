package dev.leasehold.spring;

import org.springframework.boot.autoconfigure.condition.AnyNestedCondition;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;

/** Jackson 3 or Jackson 2 is on the class path. */
final class JacksonCondition extends AnyNestedCondition {

    JacksonCondition() {
        super(ConfigurationPhase.REGISTER_BEAN);
    }

    @ConditionalOnClass(name = "tools.jackson.databind.ObjectMapper")
    static final class Jackson3 {}

    @ConditionalOnClass(name = "com.fasterxml.jackson.databind.ObjectMapper")
    static final class Jackson2 {}
}
