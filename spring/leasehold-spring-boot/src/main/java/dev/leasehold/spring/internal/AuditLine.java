package dev.leasehold.spring.internal;

import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.slf4j.event.Level;
import org.slf4j.spi.LoggingEventBuilder;

/**
 * One line of the audit log, the only writer of logger {@code leasehold.audit}: {@code event=NAME}
 * followed by {@code name=value} fields in the order they were added, separated by one space.
 * Numbers and booleans are written bare; every text value is double-quoted, with backslash, double
 * quote, CR, LF and tab escaped as {@code \\ \" \r \n \t} and every other character outside
 * printable ASCII as {@code \}{@code uXXXX} (UTF-16), so a line is printable ASCII and a value can
 * neither end its line nor imitate another field. A text value longer than {@link #MAX} characters
 * keeps its first {@code MAX} and is followed by the bare field {@code NAME.truncated} giving how
 * many characters were cut. The same fields, in the same order, are the event's SLF4J key-value
 * pairs (text values escaped, without the quotes). Not thread-safe: build one per event.
 */
public final class AuditLine {

    /** The audit logger's name. */
    public static final String LOGGER = "leasehold.audit";

    /** The longest text value written whole. */
    public static final int MAX = 256;

    private static final Logger log = LoggerFactory.getLogger(LOGGER);

    private final List<Map.Entry<String, Object>> fields = new ArrayList<>();
    private final StringBuilder line = new StringBuilder(96);

    private AuditLine(String event) {
        if (!event.matches("[a-z][a-z0-9.-]*")) {
            throw new IllegalArgumentException("not an audit event name: " + event);
        }
        add("event", event, event);
    }

    /** A line for {@code event} (lower case letters, digits, dots and dashes). */
    public static AuditLine of(String event) {
        return new AuditLine(event);
    }

    /** Adds a text field; {@code null} is written as the bare word {@code null}. */
    public AuditLine text(String name, Object value) {
        if (value == null) {
            return add(name, null, "null");
        }
        String text = String.valueOf(value);
        int keep = text.length() <= MAX ? text.length() : MAX;
        if (keep < text.length() && Character.isHighSurrogate(text.charAt(keep - 1))) {
            keep--; // never split a surrogate pair
        }
        String escaped = escape(text, keep);
        add(name, escaped, "\"" + escaped + "\"");
        if (keep < text.length()) {
            number(name + ".truncated", text.length() - keep);
        }
        return this;
    }

    /** Adds a number field. */
    public AuditLine number(String name, long value) {
        return add(name, value, Long.toString(value));
    }

    /** Adds a boolean field. */
    public AuditLine flag(String name, boolean value) {
        return add(name, value, Boolean.toString(value));
    }

    /** The fields after {@code event}, in order, as the key-value pairs carry them. */
    public Map<String, Object> data() {
        Map<String, Object> data = new LinkedHashMap<>();
        for (Map.Entry<String, Object> field : fields.subList(1, fields.size())) {
            data.put(field.getKey(), field.getValue());
        }
        return Collections.unmodifiableMap(data);
    }

    /** The line as written. */
    @Override
    public String toString() {
        return line.toString();
    }

    /** Writes the line at {@code level} to the audit logger, with its fields as key-value pairs. */
    public void log(Level level) {
        if (!log.isEnabledForLevel(level)) {
            return;
        }
        LoggingEventBuilder event = log.atLevel(level);
        for (Map.Entry<String, Object> field : fields) {
            event = event.addKeyValue(field.getKey(), field.getValue());
        }
        event.log("{}", line);
    }

    private AuditLine add(String name, Object value, String written) {
        if (!name.matches("[A-Za-z][A-Za-z0-9.]*")) {
            throw new IllegalArgumentException("not an audit field name: " + name);
        }
        if (!fields.isEmpty()) {
            line.append(' ');
        }
        line.append(name).append('=').append(written);
        fields.add(new java.util.AbstractMap.SimpleImmutableEntry<>(name, value));
        return this;
    }

    /** The first {@code length} characters of {@code text}, escaped as the class describes. */
    public static String escape(String text, int length) {
        StringBuilder out = new StringBuilder(length + 8);
        for (int i = 0; i < length; i++) {
            char c = text.charAt(i);
            switch (c) {
                case '\\' -> out.append("\\\\");
                case '"' -> out.append("\\\"");
                case '\n' -> out.append("\\n");
                case '\r' -> out.append("\\r");
                case '\t' -> out.append("\\t");
                default -> {
                    if (c >= 0x20 && c <= 0x7e) {
                        out.append(c);
                    } else {
                        out.append("\\u")
                                .append(HEX[(c >> 12) & 0xf])
                                .append(HEX[(c >> 8) & 0xf])
                                .append(HEX[(c >> 4) & 0xf])
                                .append(HEX[c & 0xf]);
                    }
                }
            }
        }
        return out.toString();
    }

    private static final char[] HEX = "0123456789abcdef".toCharArray();
}
