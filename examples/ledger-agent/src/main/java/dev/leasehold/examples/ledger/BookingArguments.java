package dev.leasehold.examples.ledger;

import com.fasterxml.jackson.core.JacksonException;
import com.fasterxml.jackson.core.StreamReadFeature;
import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.json.JsonMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.math.BigDecimal;
import java.time.LocalDate;
import java.time.format.DateTimeFormatter;
import java.time.format.DateTimeParseException;
import java.time.format.ResolverStyle;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.regex.Pattern;
import java.util.stream.Collectors;

/**
 * The arguments of one {@code create_transaction} call, checked field by field. Everything a model
 * can get wrong becomes an {@link Invalid} whose short message goes back to the model as the tool's
 * error, so it can correct the call; nothing a model sends can make the request fail or cost more
 * than a few microseconds (sizes are checked before anything is parsed or scaled). Thread-safe.
 */
final class BookingArguments {

    /** The longest arguments text looked at, in characters. */
    static final int MAX_ARGUMENTS = 4000;
    /** The longest note, in characters (the column is {@code VARCHAR(200)}). */
    static final int MAX_NOTE = 200;
    /** The greatest amount, and the digits it has before the decimal point. */
    static final BigDecimal MAX_AMOUNT = new BigDecimal("100000000");

    private static final int MAX_INTEGER_DIGITS = 9;
    private static final Pattern AMOUNT_TEXT = Pattern.compile("[0-9]{1,9}(\\.[0-9]{1,2})?");
    private static final DateTimeFormatter ISO_DATE =
            DateTimeFormatter.ofPattern("uuuu-MM-dd").withResolverStyle(ResolverStyle.STRICT);
    /** The relative days the embedded model writes, and their distance from today. */
    private static final Map<String, Integer> RELATIVE_DAYS =
            Map.of("today", 0, "今天", 0, "yesterday", 1, "昨天", 1, "前天", 2);

    private static final String DATE_RULE = "date must be YYYY-MM-DD or one of today, yesterday, 今天, 昨天, 前天";
    private static final LocalDate EARLIEST = LocalDate.of(1900, 1, 1);

    /** Reads decimals exactly ({@code 1.005} stays {@code 1.005}), and refuses duplicate keys. */
    private static final ObjectMapper STRICT = JsonMapper.builder()
            .enable(DeserializationFeature.USE_BIG_DECIMAL_FOR_FLOATS)
            .enable(DeserializationFeature.FAIL_ON_TRAILING_TOKENS)
            .enable(StreamReadFeature.STRICT_DUPLICATE_DETECTION)
            .build();

    /** Why a call cannot be booked, in words the model can act on. */
    static final class Invalid extends Exception {
        private static final long serialVersionUID = 1L;

        Invalid(String message) {
            super(message);
        }
    }

    /** A booking that passed every check. */
    record Booking(BigDecimal amount, String type, LedgerRepository.Category category, String note, LocalDate date) {}

    private BookingArguments() {}

    /**
     * Reads the arguments as a JSON object.
     *
     * @throws Invalid if they are too long, not JSON, not one object, or repeat a key
     */
    static ObjectNode object(String argumentsJson) throws Invalid {
        if (argumentsJson == null || argumentsJson.isBlank()) {
            throw new Invalid("arguments must be a JSON object, were empty");
        }
        if (argumentsJson.length() > MAX_ARGUMENTS) {
            throw new Invalid(
                    "arguments must be at most " + MAX_ARGUMENTS + " characters, were " + argumentsJson.length());
        }
        JsonNode tree;
        try {
            tree = STRICT.readTree(argumentsJson);
        } catch (JacksonException e) {
            throw new Invalid("arguments must be a JSON object: " + quote(e.getOriginalMessage(), 120));
        }
        if (tree == null || !tree.isObject()) {
            throw new Invalid("arguments must be a JSON object, were " + (tree == null ? "empty" : kind(tree)));
        }
        return (ObjectNode) tree;
    }

    /**
     * Checks every field of a {@code create_transaction} call.
     *
     * @param args the call's arguments, as {@link #object} read them
     * @param categories the ledger's categories
     * @param today today in the user's time zone, for relative dates and the default
     * @throws Invalid naming the first field that is wrong
     */
    static Booking booking(ObjectNode args, List<LedgerRepository.Category> categories, LocalDate today)
            throws Invalid {
        BigDecimal amount = amount(args.get("amount"));
        JsonNode typeNode = args.get("type");
        String type = typeNode != null && typeNode.isTextual() ? typeNode.asText() : null;
        if (!"expense".equals(type) && !"income".equals(type)) {
            throw new Invalid("type must be expense or income, was "
                    + (type != null ? quote(type, 20) : typeNode == null ? "missing" : kind(typeNode)));
        }
        LedgerRepository.Category category = category(args.get("category"), type, categories);
        String note = args.hasNonNull("note") ? text(args.get("note"), "note") : "";
        if (note.codePointCount(0, note.length()) > MAX_NOTE) {
            throw new Invalid(
                    "note must be at most " + MAX_NOTE + " characters, was " + note.codePointCount(0, note.length()));
        }
        if (note.chars().anyMatch(Character::isISOControl)) {
            throw new Invalid("note must not contain control characters");
        }
        LocalDate date = date(args.get("date"), today);
        return new Booking(amount, type, category, note.strip(), date);
    }

    private static BigDecimal amount(JsonNode node) throws Invalid {
        String rule = "amount must be a number greater than 0 and at most " + MAX_AMOUNT.toPlainString()
                + " with at most 2 decimals";
        BigDecimal amount;
        if (node == null || node.isNull()) {
            throw new Invalid("amount is missing; " + rule);
        } else if (node.isNumber()) {
            amount = node.decimalValue();
            // Digits before the point are precision - scale: known without expanding 1e1000000.
            if (amount.precision() - amount.scale() > MAX_INTEGER_DIGITS) {
                throw new Invalid(rule + ", was too large");
            }
        } else if (node.isTextual()) {
            String text = node.asText().strip();
            if (!AMOUNT_TEXT.matcher(text).matches()) {
                throw new Invalid(rule + ", was " + quote(text, 20));
            }
            amount = new BigDecimal(text);
        } else {
            throw new Invalid(rule + ", was " + kind(node));
        }
        if (amount.signum() <= 0 || amount.compareTo(MAX_AMOUNT) > 0) {
            throw new Invalid(rule + ", was " + amount.toPlainString());
        }
        if (amount.stripTrailingZeros().scale() > 2) {
            throw new Invalid("amount must have at most 2 decimals, was " + quote(amount.toPlainString(), 20));
        }
        return amount.setScale(2);
    }

    private static LedgerRepository.Category category(
            JsonNode node, String type, List<LedgerRepository.Category> categories) throws Invalid {
        String known = categories.stream()
                .filter(c -> c.type().equals(type))
                .map(LedgerRepository.Category::name)
                .collect(Collectors.joining(", "));
        if (node == null || node.isNull() || (node.isTextual() && node.asText().isBlank())) {
            throw new Invalid("category is missing; the " + type + " categories are: " + known);
        }
        String name = text(node, "category").strip();
        return categories.stream()
                .filter(c -> c.type().equals(type) && c.name().equals(name))
                .findFirst()
                .orElseThrow(() -> new Invalid("category " + quote(name, 50) + " does not exist for " + type + "; the "
                        + type + " categories are: " + known));
    }

    private static LocalDate date(JsonNode node, LocalDate today) throws Invalid {
        if (node == null || node.isNull()) {
            return today;
        }
        String text = text(node, "date").strip();
        Integer daysAgo = RELATIVE_DAYS.get(text.toLowerCase(Locale.ROOT));
        if (daysAgo != null) {
            return today.minusDays(daysAgo);
        }
        LocalDate date;
        try {
            date = text.length() == 10 ? LocalDate.parse(text, ISO_DATE) : null;
        } catch (DateTimeParseException e) {
            date = null;
        }
        if (date == null) {
            throw new Invalid(DATE_RULE + "; was " + quote(text, 30));
        }
        if (date.isBefore(EARLIEST) || date.isAfter(today.plusYears(1))) {
            throw new Invalid(
                    "date must be between " + EARLIEST + " and one year after today (" + today + "), was " + date);
        }
        return date;
    }

    private static String text(JsonNode node, String field) throws Invalid {
        if (node == null || !node.isTextual()) {
            throw new Invalid(field + " must be text, was " + (node == null ? "missing" : kind(node)));
        }
        return node.asText();
    }

    private static String kind(JsonNode node) {
        return node.getNodeType().name().toLowerCase(Locale.ROOT);
    }

    /** A value quoted for an error message, cut to {@code max} characters so nothing long is echoed. */
    static String quote(String value, int max) {
        if (value == null) {
            return "null";
        }
        String cut = value.length() <= max ? value : value.substring(0, max) + "…";
        return "\"" + cut.replaceAll("\\p{Cntrl}", "?") + "\"";
    }
}
