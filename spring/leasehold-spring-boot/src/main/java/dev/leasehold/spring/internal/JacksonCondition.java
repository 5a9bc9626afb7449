package dev.leasehold.spring.internal;

import org.springframework.boot.autoconfigure.condition.AnyNestedCondition;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;

/** Jackson 3 or Jackson 2 is on the class path. */
public final class JacksonCondition extends AnyNestedCondition {

    public JacksonCondition() {
        super(ConfigurationPhase.REGISTER_BEAN);
    }

    @ConditionalOnClass(name = "tools.jackson.databind.ObjectMapper")
    static final class Jackson3 {}

    @ConditionalOnClass(name = "com.fasterxml.jackson.databind.ObjectMapper")
    static final class Jackson2 {}
}
