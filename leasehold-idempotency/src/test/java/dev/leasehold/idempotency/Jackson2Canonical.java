package dev.leasehold.idempotency;

import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonGenerator;
import com.fasterxml.jackson.core.StreamReadFeature;
import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.json.JsonMapper;
import java.io.IOException;
import java.io.StringWriter;
import java.math.BigDecimal;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;

/**
 * The canonical text as fingerprints computed it before they carried a version (through Jackson 2),
 * kept as the reference that version 1 must equal, so that stored fingerprints without a prefix
 * still match.
 */
final class Jackson2Canonical {

    private static final ObjectMapper MAPPER = JsonMapper.builder()
            .enable(DeserializationFeature.USE_BIG_DECIMAL_FOR_FLOATS)
            .enable(DeserializationFeature.USE_BIG_INTEGER_FOR_INTS)
            .enable(DeserializationFeature.FAIL_ON_TRAILING_TOKENS)
            .enable(StreamReadFeature.STRICT_DUPLICATE_DETECTION)
            .build();
    private static final JsonFactory FACTORY = MAPPER.getFactory();

    private Jackson2Canonical() {}

    static String canonicalize(String json) throws IOException {
        JsonNode tree = MAPPER.readTree(json);
        StringWriter out = new StringWriter();
        try (JsonGenerator generator = FACTORY.createGenerator(out)) {
            write(tree, generator);
        }
        return out.toString();
    }

    private static void write(JsonNode node, JsonGenerator out) throws IOException {
        switch (node.getNodeType()) {
            case OBJECT -> {
                List<String> names = new ArrayList<>();
                Iterator<String> it = node.fieldNames();
                it.forEachRemaining(names::add);
                names.sort(null);
                out.writeStartObject();
                for (String name : names) {
                    out.writeFieldName(name);
                    write(node.get(name), out);
                }
                out.writeEndObject();
            }
            case ARRAY -> {
                out.writeStartArray();
                for (JsonNode element : node) {
                    write(element, out);
                }
                out.writeEndArray();
            }
            case NUMBER -> {
                BigDecimal value = node.decimalValue();
                if (value.signum() == 0) {
                    out.writeNumber("0");
                } else {
                    BigDecimal stripped = value.stripTrailingZeros();
                    int exponent = -stripped.scale();
                    String digits = stripped.unscaledValue().toString();
                    out.writeNumber(exponent == 0 ? digits : digits + "e" + exponent);
                }
            }
            case STRING -> out.writeString(node.textValue());
            case BOOLEAN -> out.writeBoolean(node.booleanValue());
            case NULL -> out.writeNull();
            default -> throw new IllegalArgumentException("unexpected JSON node " + node.getNodeType());
        }
    }
}
