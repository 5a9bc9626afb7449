package dev.leasehold.idempotency;

import java.math.BigDecimal;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

/**
 * The canonical form of a JSON document, and its versioned SHA-256 fingerprint: two documents that
 * mean the same (key order, white space, spelling of a number) get the same fingerprint; strings,
 * array order and types are kept. The fingerprint is {@link #VERSION} and the hex SHA-256 of the
 * canonical text's UTF-8 bytes; other rules would get another prefix. Text that is not one valid
 * JSON document (RFC 8259; duplicate keys, nesting deeper than 1000 and unpaired surrogates
 * included) is an {@link IllegalArgumentException}, never a fingerprint. The rules of version 1 are
 * in {@code docs/design/idempotency.md}. Thread-safe.
 */
public final class CanonicalJson {

    /** The prefix of fingerprints made by these rules. */
    public static final String VERSION = "v1:";

    private static final int MAX_DEPTH = 1000;
    private static final int MAX_NUMBER_LENGTH = 1000;
    private static final Object NULL = new Object();

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
        Parser parser = new Parser(json);
        parser.skipWhiteSpace();
        if (parser.atEnd()) {
            throw new IllegalArgumentException("not valid JSON: the text is empty");
        }
        Object tree = parser.value(0);
        parser.skipWhiteSpace();
        if (!parser.atEnd()) {
            throw parser.error("trailing content after the JSON document");
        }
        StringBuilder out = new StringBuilder(json.length());
        write(tree, out);
        return out.toString();
    }

    /**
     * {@link #VERSION} and the SHA-256 (lower-case hex) of the canonical text.
     *
     * @throws IllegalArgumentException if the text is not one valid JSON document
     */
    public static String fingerprint(String json) {
        return VERSION + sha256(canonicalize(json));
    }

    /**
     * The SHA-256 (lower-case hex) of a text's UTF-8 bytes.
     *
     * @throws IllegalArgumentException if the text has an unpaired surrogate (no UTF-8 form)
     */
    public static String sha256(String text) {
        byte[] bytes = Utf8.encode(text, "text to hash");
        try {
            return HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256").digest(bytes));
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException("SHA-256 is required by every Java platform", e);
        }
    }

    @SuppressWarnings("unchecked")
    private static void write(Object node, StringBuilder out) {
        if (node instanceof Map<?, ?> map) {
            out.append('{');
            boolean first = true;
            for (Map.Entry<String, Object> e : ((Map<String, Object>) map).entrySet()) {
                if (!first) {
                    out.append(',');
                }
                first = false;
                string(e.getKey(), out);
                out.append(':');
                write(e.getValue(), out);
            }
            out.append('}');
        } else if (node instanceof List<?> list) {
            out.append('[');
            for (int i = 0; i < list.size(); i++) {
                if (i > 0) {
                    out.append(',');
                }
                write(list.get(i), out);
            }
            out.append(']');
        } else if (node instanceof BigDecimal number) {
            out.append(number(number));
        } else if (node instanceof String text) {
            string(text, out);
        } else if (node instanceof Boolean bool) {
            out.append(bool ? "true" : "false");
        } else {
            out.append("null");
        }
    }

    private static void string(String text, StringBuilder out) {
        out.append('"');
        for (int i = 0; i < text.length(); i++) {
            char c = text.charAt(i);
            switch (c) {
                case '"' -> out.append("\\\"");
                case '\\' -> out.append("\\\\");
                case '\b' -> out.append("\\b");
                case '\t' -> out.append("\\t");
                case '\n' -> out.append("\\n");
                case '\f' -> out.append("\\f");
                case '\r' -> out.append("\\r");
                default -> {
                    if (c < 0x20) {
                        out.append("\\u00")
                                .append(Character.toUpperCase(Character.forDigit(c >> 4, 16)))
                                .append(Character.toUpperCase(Character.forDigit(c & 0xF, 16)));
                    } else {
                        out.append(c);
                    }
                }
            }
        }
        out.append('"');
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

    /** A strict RFC 8259 reader into maps (sorted), lists, BigDecimal, String, Boolean and NULL. */
    private static final class Parser {
        private final String text;
        private int at;

        Parser(String text) {
            this.text = text;
        }

        boolean atEnd() {
            return at >= text.length();
        }

        IllegalArgumentException error(String what) {
            return new IllegalArgumentException("not valid JSON: " + what + " at index " + at);
        }

        void skipWhiteSpace() {
            while (at < text.length()) {
                char c = text.charAt(at);
                if (c != ' ' && c != '\t' && c != '\n' && c != '\r') {
                    return;
                }
                at++;
            }
        }

        Object value(int depth) {
            if (depth > MAX_DEPTH) {
                throw error("nesting deeper than " + MAX_DEPTH);
            }
            skipWhiteSpace();
            if (atEnd()) {
                throw error("unexpected end of text");
            }
            char c = text.charAt(at);
            return switch (c) {
                case '{' -> object(depth);
                case '[' -> array(depth);
                case '"' -> string();
                case 't' -> literal("true", Boolean.TRUE);
                case 'f' -> literal("false", Boolean.FALSE);
                case 'n' -> literal("null", NULL);
                default -> {
                    if (c == '-' || (c >= '0' && c <= '9')) {
                        yield number();
                    }
                    throw error("unexpected character '" + c + "'");
                }
            };
        }

        private Object literal(String word, Object value) {
            if (!text.startsWith(word, at)) {
                throw error("unexpected word");
            }
            at += word.length();
            return value;
        }

        private Map<String, Object> object(int depth) {
            at++; // {
            Map<String, Object> members = new TreeMap<>();
            skipWhiteSpace();
            if (!atEnd() && text.charAt(at) == '}') {
                at++;
                return members;
            }
            while (true) {
                skipWhiteSpace();
                if (atEnd() || text.charAt(at) != '"') {
                    throw error("expected a member name");
                }
                int nameAt = at;
                String name = string();
                skipWhiteSpace();
                expect(':');
                Object value = value(depth + 1);
                if (members.put(name, value) != null) {
                    at = nameAt;
                    throw error("duplicate member name \"" + name + "\"");
                }
                skipWhiteSpace();
                if (atEnd()) {
                    throw error("unexpected end of text in an object");
                }
                char c = text.charAt(at++);
                if (c == '}') {
                    return members;
                }
                if (c != ',') {
                    at--;
                    throw error("expected ',' or '}'");
                }
            }
        }

        private List<Object> array(int depth) {
            at++; // [
            List<Object> elements = new ArrayList<>();
            skipWhiteSpace();
            if (!atEnd() && text.charAt(at) == ']') {
                at++;
                return elements;
            }
            while (true) {
                elements.add(value(depth + 1));
                skipWhiteSpace();
                if (atEnd()) {
                    throw error("unexpected end of text in an array");
                }
                char c = text.charAt(at++);
                if (c == ']') {
                    return elements;
                }
                if (c != ',') {
                    at--;
                    throw error("expected ',' or ']'");
                }
            }
        }

        private void expect(char c) {
            if (atEnd() || text.charAt(at) != c) {
                throw error("expected '" + c + "'");
            }
            at++;
        }

        private String string() {
            at++; // "
            StringBuilder out = new StringBuilder();
            while (true) {
                if (atEnd()) {
                    throw error("unterminated string");
                }
                char c = text.charAt(at);
                if (c == '"') {
                    at++;
                    break;
                }
                if (c < 0x20) {
                    throw error("unescaped control character in a string");
                }
                if (c == '\\') {
                    at++;
                    if (atEnd()) {
                        throw error("unterminated escape");
                    }
                    char e = text.charAt(at++);
                    switch (e) {
                        case '"' -> out.append('"');
                        case '\\' -> out.append('\\');
                        case '/' -> out.append('/');
                        case 'b' -> out.append('\b');
                        case 'f' -> out.append('\f');
                        case 'n' -> out.append('\n');
                        case 'r' -> out.append('\r');
                        case 't' -> out.append('\t');
                        case 'u' -> out.append(hex4());
                        default -> {
                            at--;
                            throw error("invalid escape \\" + e);
                        }
                    }
                } else {
                    out.append(c);
                    at++;
                }
            }
            String value = out.toString();
            checkSurrogates(value);
            return value;
        }

        private void checkSurrogates(String value) {
            for (int i = 0; i < value.length(); i++) {
                char c = value.charAt(i);
                if (Character.isHighSurrogate(c)
                        && i + 1 < value.length()
                        && Character.isLowSurrogate(value.charAt(i + 1))) {
                    i++;
                } else if (Character.isSurrogate(c)) {
                    throw error("unpaired surrogate U+" + String.format("%04X", (int) c)
                            + " in a string (it has no UTF-8 form)");
                }
            }
        }

        private char hex4() {
            if (at + 4 > text.length()) {
                throw error("incomplete \\u escape");
            }
            int value = 0;
            for (int i = 0; i < 4; i++) {
                int digit = Character.digit(text.charAt(at + i), 16);
                if (digit < 0) {
                    throw error("invalid \\u escape");
                }
                value = value * 16 + digit;
            }
            at += 4;
            return (char) value;
        }

        private BigDecimal number() {
            int start = at;
            if (text.charAt(at) == '-') {
                at++;
            }
            if (atEnd()) {
                throw error("a number without digits");
            }
            if (text.charAt(at) == '0') {
                at++;
            } else if (!digits()) {
                throw error("a number without digits");
            }
            if (!atEnd() && text.charAt(at) == '.') {
                at++;
                if (!digits()) {
                    throw error("no digits after the decimal point");
                }
            }
            if (!atEnd() && (text.charAt(at) == 'e' || text.charAt(at) == 'E')) {
                at++;
                if (!atEnd() && (text.charAt(at) == '+' || text.charAt(at) == '-')) {
                    at++;
                }
                if (!digits()) {
                    throw error("no digits in the exponent");
                }
            }
            if (at - start > MAX_NUMBER_LENGTH) {
                at = start;
                throw error("a number longer than " + MAX_NUMBER_LENGTH + " characters");
            }
            try {
                return new BigDecimal(text.substring(start, at));
            } catch (NumberFormatException e) {
                at = start;
                throw error("a number out of range");
            }
        }

        private boolean digits() {
            int start = at;
            while (!atEnd() && text.charAt(at) >= '0' && text.charAt(at) <= '9') {
                at++;
            }
            return at > start;
        }
    }
}
