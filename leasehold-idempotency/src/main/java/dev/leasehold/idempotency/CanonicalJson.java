package dev.leasehold.idempotency;

import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonGenerator;
import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.core.StreamReadFeature;
import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.json.JsonMapper;
import java.io.IOException;
import java.io.StringWriter;
import java.io.UncheckedIOException;
import java.math.BigDecimal;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.Iterator;
import java.util.List;

/**
 * The canonical form of a JSON document, and its SHA-256 fingerprint: two documents that mean the
 * same get the same fingerprint (seed feature S1.7).
 *
 * <p>Rules:
 *
 * <ol>
 *   <li>object keys are sorted (by UTF-16 code units) at every depth; white space is dropped;
 *   <li>numbers are compared by value: {@code 35}, {@code 35.0}, {@code 3.5E1} and {@code 350e-1}
 *       are all written {@code 35}; a non-integer is written as its digits without trailing zeros and
 *       a power of ten ({@code 0.50} is {@code 5e-1}), so no representation can be long;
 *   <li>strings are kept exactly (no Unicode normalisation; {@code "35"} is not {@code 35});
 *   <li>array order, {@code true}, {@code false} and {@code null} are kept.
 * </ol>
 *
 * <p>Invalid JSON, trailing content and duplicate keys in one object are errors ({@link
 * IllegalArgumentException}), never a fingerprint of garbage. Thread-safe.
 */
public final class CanonicalJson {

    private static final ObjectMapper MAPPER = JsonMapper.builder()
            .enable(DeserializationFeature.USE_BIG_DECIMAL_FOR_FLOATS)
            .enable(DeserializationFeature.USE_BIG_INTEGER_FOR_INTS)
            .enable(DeserializationFeature.FAIL_ON_TRAILING_TOKENS)
            .enable(StreamReadFeature.STRICT_DUPLICATE_DETECTION)
            .build();
    private static final JsonFactory FACTORY = MAPPER.getFactory();

    private CanonicalJson() {}

    /**
     * The canonical text of a JSON document.
     *
     * @throws IllegalArgumentException if the text is not one valid JSON document
     */
    public static String canonicalize(String json) {
        if (json == null) {
            throw new IllegalArgumentException("JSON text is missing (null)");
        }
        JsonNode tree;
        try {
            tree = MAPPER.readTree(json);
        } catch (JsonProcessingException e) {
            throw new IllegalArgumentException("not valid JSON: " + e.getOriginalMessage(), e);
        }
        if (tree == null || tree.isMissingNode()) {
            throw new IllegalArgumentException("not valid JSON: the text is empty");
        }
        StringWriter out = new StringWriter();
        try (JsonGenerator generator = FACTORY.createGenerator(out)) {
            write(tree, generator);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        return out.toString();
    }

    /** The canonical text of a value serialised by Jackson. */
    public static String canonicalize(Object value) {
        try {
            return canonicalize(MAPPER.writeValueAsString(value));
        } catch (JsonProcessingException e) {
            throw new IllegalArgumentException(
                    "cannot write " + value.getClass().getName() + " as JSON", e);
        }
    }

    /**
     * The SHA-256 (lower-case hex) of the canonical text.
     *
     * @throws IllegalArgumentException if the text is not one valid JSON document
     */
    public static String fingerprint(String json) {
        return sha256(canonicalize(json));
    }

    /** The SHA-256 (lower-case hex) of a text's UTF-8 bytes. */
    public static String sha256(String text) {
        try {
            return HexFormat.of()
                    .formatHex(MessageDigest.getInstance("SHA-256").digest(text.getBytes(StandardCharsets.UTF_8)));
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException("SHA-256 is required by every Java platform", e);
        }
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
            case NUMBER -> out.writeNumber(number(node.decimalValue()));
            case STRING -> out.writeString(node.textValue());
            case BOOLEAN -> out.writeBoolean(node.booleanValue());
            case NULL -> out.writeNull();
            default -> throw new IllegalArgumentException("unexpected JSON node " + node.getNodeType());
        }
    }

    /** Digits without trailing zeros, then a power of ten if there is one: 35, 35e2, 5e-1, 0. */
    private static String number(BigDecimal value) {
        if (value.signum() == 0) {
            return "0";
        }
        BigDecimal stripped = value.stripTrailingZeros();
        String digits = stripped.unscaledValue().toString();
        int exponent = -stripped.scale();
        return exponent == 0 ? digits : digits + "e" + exponent;
    }
}
