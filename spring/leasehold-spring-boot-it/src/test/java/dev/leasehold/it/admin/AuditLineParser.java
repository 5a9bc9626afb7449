package dev.leasehold.it.admin;

import java.util.ArrayList;
import java.util.List;

/**
 * A strict reader of one audit line, {@code name=value name=value ...}: a value is either a bare
 * token (letters, digits, {@code . _ : + -}) or a double-quoted text with the escapes {@code \\ \"
 * \n \r \t \}{@code uXXXX}. Anything else is refused, so a line a caller could bend does not parse.
 */
final class AuditLineParser {

    /** One field: its name, its text as written (without quotes) and its text unescaped. */
    record Field(String name, boolean quoted, String written, String value) {
        @Override
        public String toString() {
            return name + "=" + (quoted ? "\"" + written + "\"" : written);
        }
    }

    private AuditLineParser() {}

    static List<Field> parse(String line) {
        List<Field> fields = new ArrayList<>();
        int i = 0;
        while (true) {
            int equals = line.indexOf('=', i);
            if (equals <= i) {
                throw new IllegalArgumentException("no field name at " + i + " in: " + line);
            }
            String name = line.substring(i, equals);
            if (!name.matches("[A-Za-z][A-Za-z0-9.]*")) {
                throw new IllegalArgumentException("bad field name '" + name + "' in: " + line);
            }
            i = equals + 1;
            if (i < line.length() && line.charAt(i) == '"') {
                StringBuilder value = new StringBuilder();
                int start = ++i;
                while (true) {
                    if (i >= line.length()) {
                        throw new IllegalArgumentException("unterminated value of " + name + " in: " + line);
                    }
                    char c = line.charAt(i);
                    if (c == '"') {
                        break;
                    }
                    if (c < 0x20 || c > 0x7e) {
                        throw new IllegalArgumentException("raw character " + (int) c + " in: " + line);
                    }
                    if (c == '\\') {
                        char e = line.charAt(i + 1);
                        switch (e) {
                            case '\\' -> value.append('\\');
                            case '"' -> value.append('"');
                            case 'n' -> value.append('\n');
                            case 'r' -> value.append('\r');
                            case 't' -> value.append('\t');
                            case 'u' -> {
                                value.append((char) Integer.parseInt(line.substring(i + 2, i + 6), 16));
                                i += 4;
                            }
                            default -> throw new IllegalArgumentException("bad escape \\" + e + " in: " + line);
                        }
                        i += 2;
                    } else {
                        value.append(c);
                        i++;
                    }
                }
                fields.add(new Field(name, true, line.substring(start, i), value.toString()));
                i++;
            } else {
                int start = i;
                while (i < line.length() && line.charAt(i) != ' ') {
                    i++;
                }
                String token = line.substring(start, i);
                if (!token.matches("[A-Za-z0-9._:+-]+")) {
                    throw new IllegalArgumentException("bad bare value '" + token + "' of " + name + " in: " + line);
                }
                fields.add(new Field(name, false, token, token));
            }
            if (i == line.length()) {
                return fields;
            }
            if (line.charAt(i) != ' ') {
                throw new IllegalArgumentException("no space after " + name + " in: " + line);
            }
            i++;
        }
    }
}
