package dev.leasehold.examples.ledger;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.math.BigDecimal;
import java.time.LocalDate;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * The embedded model: a deterministic parser of everyday Chinese and English bookkeeping phrases
 * ("中午吃粉花了35", "打车30，午饭20", "salary 8000 received", "taxi 30 yesterday") that answers with
 * the same tool calls a real model would: {@code list_categories}, then one {@code
 * create_transaction} per amount, then a summary. Needs no network.
 */
public final class RuleBasedModel implements Model {

    /**
     * A number as typed, whole: all its digits, decimals and exponent. The booking check, not this
     * parser, decides whether it can be booked ("30.123" is refused, never cut to 30.12).
     */
    private static final Pattern AMOUNT = Pattern.compile("(-?\\d+(?:\\.\\d+)*(?:[eE][+-]?\\d+)?)");

    private static final Pattern SEPARATORS = Pattern.compile("[，,；;、]|\\band\\b|和");
    private static final Pattern TODAY = Pattern.compile("today=(\\d{4}-\\d{2}-\\d{2})");
    private static final List<String> INCOME =
            List.of("salary", "工资", "收入", "received", "income", "奖金", "bonus", "refund", "退款");
    private static final Map<String, List<String>> CATEGORIES = Map.of(
            "餐饮", List.of("吃", "饭", "粉", "面", "餐", "lunch", "dinner", "breakfast", "food", "coffee", "咖啡", "奶茶"),
            "交通", List.of("打车", "taxi", "地铁", "公交", "bus", "uber", "train", "车"),
            "购物", List.of("买", "超市", "shopping", "淘宝"),
            "工资", List.of("salary", "工资"));

    private final ObjectMapper mapper = new ObjectMapper();

    /**
     * One bookable item found in a message: its amount as typed ({@code typed}) and as a number
     * ({@code amount}, null when the text is no number, such as "1.2.3").
     */
    record Item(BigDecimal amount, String typed, String type, String category, String note, LocalDate date) {}

    @Override
    public Reply next(String systemPrompt, List<Turn> conversation) {
        Turn last = conversation.get(conversation.size() - 1);
        LocalDate today = today(systemPrompt);
        if (last.role().equals("user")) {
            if (parse(last.content(), today).isEmpty()) {
                return new Reply("I found no amount to book in that message. Try \"lunch 35\" or \"打车30\".", List.of());
            }
            return new Reply(null, List.of(new ToolCall("call-1", "list_categories", "{}")));
        }
        boolean listed = conversation.stream()
                .anyMatch(t -> t.toolCalls().stream().anyMatch(c -> c.name().equals("list_categories")));
        boolean booked = conversation.stream()
                .anyMatch(t -> t.toolCalls().stream().anyMatch(c -> c.name().equals("create_transaction")));
        String userText = conversation.stream()
                .filter(t -> t.role().equals("user"))
                .reduce((a, b) -> b)
                .orElseThrow()
                .content();
        if (listed && !booked) {
            List<ToolCall> calls = new ArrayList<>();
            int n = 0;
            for (Item item : parse(userText, today)) {
                calls.add(new ToolCall(
                        "call-tx-" + (++n),
                        "create_transaction",
                        json(Map.of(
                                "amount", item.amount() != null ? item.amount() : item.typed(),
                                "type", item.type(),
                                "category", item.category(),
                                "note", item.note(),
                                "date", item.date().toString()))));
            }
            return new Reply(null, calls);
        }
        return new Reply(summary(conversation), List.of());
    }

    private String summary(List<Turn> conversation) {
        List<String> lines = new ArrayList<>();
        for (Turn turn : conversation) {
            if (turn.role().equals("tool")
                    && turn.toolCallId() != null
                    && turn.toolCallId().startsWith("call-tx-")) {
                try {
                    JsonNode result = mapper.readTree(turn.content());
                    if (result.has("error")) {
                        lines.add("not booked: " + result.get("error").asText());
                    } else {
                        lines.add(result.get("type").asText() + " "
                                + result.get("amount").asText() + " "
                                + result.get("category").asText() + " ("
                                + result.get("note").asText() + ")");
                    }
                } catch (Exception e) {
                    lines.add("not booked: unreadable tool result");
                }
            }
        }
        return "Booked " + lines.stream().filter(l -> !l.startsWith("not")).count() + ": " + String.join("; ", lines);
    }

    /** The items of a message, in order. */
    static List<Item> parse(String text, LocalDate today) {
        List<Item> items = new ArrayList<>();
        for (String segment : SEPARATORS.split(text)) {
            Matcher m = AMOUNT.matcher(segment);
            if (!m.find()) {
                continue;
            }
            BigDecimal amount;
            try {
                amount = new BigDecimal(m.group(1));
            } catch (NumberFormatException e) {
                amount = null; // sent as typed, so the booking check names it
            }
            String lower = segment.toLowerCase(Locale.ROOT);
            String type = INCOME.stream().anyMatch(lower::contains) ? "income" : "expense";
            String category = type.equals("income") ? "工资" : "其他";
            for (String name : List.of("交通", "餐饮", "购物")) {
                if (CATEGORIES.get(name).stream().anyMatch(lower::contains)) {
                    category = name;
                    break;
                }
            }
            if (type.equals("income") && !CATEGORIES.get("工资").stream().anyMatch(lower::contains)) {
                category = "其他收入";
            }
            LocalDate date = lower.contains("yesterday") || segment.contains("昨天")
                    ? today.minusDays(1)
                    : segment.contains("前天") ? today.minusDays(2) : today;
            String note = segment.replace(m.group(1), "")
                    .replaceAll("花了|块钱|块|元|received|yesterday|昨天|前天", "")
                    .trim();
            items.add(new Item(amount, m.group(1), type, category, note.isEmpty() ? category : note, date));
        }
        return items;
    }

    private static LocalDate today(String systemPrompt) {
        Matcher m = TODAY.matcher(systemPrompt == null ? "" : systemPrompt);
        return m.find() ? LocalDate.parse(m.group(1)) : LocalDate.now();
    }

    private String json(Object value) {
        try {
            return mapper.writeValueAsString(value);
        } catch (Exception e) {
            throw new IllegalStateException(e);
        }
    }
}
