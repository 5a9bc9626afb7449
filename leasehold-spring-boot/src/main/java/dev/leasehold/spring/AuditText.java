package dev.leasehold.spring;

/**
 * Makes caller-supplied text safe for one audit line: control characters (CR, LF, tab and the
 * rest), Unicode line and paragraph separators, backslashes and double quotes are escaped, so a
 * value can never end the line it is in and forge another; long values are cut.
 */
final class AuditText {

    static final int MAX = 300;

    private AuditText() {}

    static String clean(Object value) {
        if (value == null) {
            return "null";
        }
        String text = String.valueOf(value);
        StringBuilder out = new StringBuilder(Math.min(text.length(), MAX) + 8);
        for (int i = 0; i < text.length() && out.length() < MAX; i++) {
            char c = text.charAt(i);
            switch (c) {
                case '\n' -> out.append("\\n");
                case '\r' -> out.append("\\r");
                case '\t' -> out.append("\\t");
                case '\\' -> out.append("\\\\");
                case '"' -> out.append("\\\"");
                default -> {
                    if (Character.isISOControl(c) || c == '\u2028' || c == '\u2029') {
                        out.append(String.format("\\u%04x", (int) c));
                    } else {
                        out.append(c);
                    }
                }
            }
        }
        if (out.length() >= MAX && text.length() > MAX) {
            out.append("...");
        }
        return out.toString();
    }
}
