package dev.leasehold.examples.ledger;

import org.springframework.boot.SpringApplication;
import org.springframework.boot.autoconfigure.SpringBootApplication;
import org.springframework.boot.jackson.autoconfigure.JsonMapperBuilderCustomizer;
import org.springframework.context.annotation.Bean;
import tools.jackson.core.StreamReadFeature;
import tools.jackson.databind.DeserializationFeature;
import tools.jackson.databind.MapperFeature;
import tools.jackson.databind.cfg.CoercionAction;
import tools.jackson.databind.cfg.CoercionInputShape;
import tools.jackson.databind.type.LogicalType;

/** Seed 1's AI bookkeeping chat on Leasehold's session, request and side-effect leases. */
@SpringBootApplication
public class LedgerAgentApplication {

    public static void main(String[] args) {
        SpringApplication.run(LedgerAgentApplication.class, args);
    }

    /**
     * Request bodies are read as written or refused with a 400 naming the field: a field the request
     * does not have, a number or boolean where text belongs, a field named twice, content after the
     * body's value.
     */
    @Bean
    JsonMapperBuilderCustomizer strictRequestBodies() {
        return builder -> builder.enable(StreamReadFeature.STRICT_DUPLICATE_DETECTION)
                .enable(
                        DeserializationFeature.FAIL_ON_UNKNOWN_PROPERTIES,
                        DeserializationFeature.FAIL_ON_TRAILING_TOKENS)
                .disable(MapperFeature.ALLOW_COERCION_OF_SCALARS)
                .withCoercionConfig(LogicalType.Textual, text -> {
                    for (CoercionInputShape shape : new CoercionInputShape[] {
                        CoercionInputShape.Integer, CoercionInputShape.Float, CoercionInputShape.Boolean
                    }) {
                        text.setCoercion(shape, CoercionAction.Fail);
                    }
                });
    }
}
