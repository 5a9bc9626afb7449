package dev.leasehold.examples.ledger;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.Executors;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * An OpenAI-compatible chat-completions server for tests ({@code POST /v1/chat/completions}): each
 * round of a conversation (1 + the assistant messages it already holds) is answered by a scripted
 * step that can delay, fail with an HTTP status, hang, or return chosen tool calls or text. Every
 * request it received is kept, so tests can read the tool results the service sent back.
 */
final class StubModel implements AutoCloseable {

    /** What the stub answers for one call: HTTP status and body, after an optional delay. */
    record Answer(int status, String body, long delayMillis) {}

    /** Decides the answer of a round from the request and how often that round was asked. */
    @FunctionalInterface
    interface Step {
        Answer answer(JsonNode request, int attempt) throws Exception;
    }

    private static final ObjectMapper MAPPER = new ObjectMapper();

    private final HttpServer server;
    private final Map<Integer, Step> steps = new ConcurrentHashMap<>();
    private final Map<Integer, AtomicInteger> attempts = new ConcurrentHashMap<>();
    final List<JsonNode> received = new CopyOnWriteArrayList<>();

    StubModel() {
        try {
            server = HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 0);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        server.setExecutor(Executors.newCachedThreadPool(r -> {
            Thread t = new Thread(r, "stub-model");
            t.setDaemon(true);
            return t;
        }));
        server.createContext("/v1/chat/completions", this::handle);
        server.start();
    }

    /** The base URL to configure as {@code ledger.model.base-url}. */
    String baseUrl() {
        return "http://127.0.0.1:" + server.getAddress().getPort() + "/v1";
    }

    /** Scripts round {@code round} (1-based). */
    StubModel on(int round, Step step) {
        steps.put(round, step);
        return this;
    }

    /** Forgets the script and the counts. */
    void reset() {
        steps.clear();
        attempts.clear();
        received.clear();
    }

    /** How many times round {@code round} was asked. */
    int asked(int round) {
        AtomicInteger n = attempts.get(round);
        return n == null ? 0 : n.get();
    }

    /** How many calls the stub answered or refused in all. */
    int calls() {
        return attempts.values().stream().mapToInt(AtomicInteger::get).sum();
    }

    /** The content of the tool results in the last request of round {@code round}. */
    List<String> toolResultsSentIn(int round) {
        for (int i = received.size() - 1; i >= 0; i--) {
            JsonNode request = received.get(i);
            if (round(request) == round) {
                return java.util.stream.StreamSupport.stream(
                                request.path("messages").spliterator(), false)
                        .filter(m -> m.path("role").asText().equals("tool"))
                        .map(m -> m.path("content").asText())
                        .toList();
            }
        }
        return List.of();
    }

    static int round(JsonNode request) {
        int assistant = 0;
        for (JsonNode message : request.path("messages")) {
            if (message.path("role").asText().equals("assistant")) {
                assistant++;
            }
        }
        return assistant + 1;
    }

    private void handle(HttpExchange exchange) throws IOException {
        try (exchange) {
            JsonNode request = MAPPER.readTree(exchange.getRequestBody().readAllBytes());
            received.add(request);
            int round = round(request);
            int attempt =
                    attempts.computeIfAbsent(round, r -> new AtomicInteger()).incrementAndGet();
            Step step = steps.get(round);
            Answer answer;
            try {
                answer = step == null
                        ? error(500, "no step scripted for round " + round)
                        : step.answer(request, attempt);
            } catch (Exception e) {
                answer = error(500, "stub step failed: " + e);
            }
            if (answer.delayMillis() > 0) {
                Thread.sleep(answer.delayMillis());
            }
            byte[] body = answer.body().getBytes(StandardCharsets.UTF_8);
            exchange.getResponseHeaders().add("Content-Type", "application/json");
            exchange.sendResponseHeaders(answer.status(), body.length);
            exchange.getResponseBody().write(body);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    // ---------------------------------------------------------------- answers

    /** A completion whose message asks for the given tool calls: (id, name, arguments JSON) triples. */
    static Answer toolCalls(String... idNameArguments) {
        ObjectNode message = MAPPER.createObjectNode().put("role", "assistant");
        message.putNull("content");
        ArrayNode calls = message.putArray("tool_calls");
        for (int i = 0; i < idNameArguments.length; i += 3) {
            ObjectNode call = calls.addObject().put("id", idNameArguments[i]).put("type", "function");
            call.putObject("function").put("name", idNameArguments[i + 1]).put("arguments", idNameArguments[i + 2]);
        }
        return completion(message);
    }

    /** A completion whose message is the final text. */
    static Answer text(String text) {
        return completion(MAPPER.createObjectNode().put("role", "assistant").put("content", text));
    }

    /** A completion whose message is given as raw JSON (for malformed replies). */
    static Answer message(String messageJson) {
        return new Answer(200, "{\"choices\":[{\"index\":0,\"message\":" + messageJson + "}]}", 0);
    }

    static Answer error(int status, String message) {
        return new Answer(status, "{\"error\":{\"message\":\"" + message.replace("\"", "'") + "\"}}", 0);
    }

    private static Answer completion(ObjectNode message) {
        ObjectNode root = MAPPER.createObjectNode().put("id", "stub").put("object", "chat.completion");
        root.putArray("choices").addObject().put("index", 0).set("message", message);
        return new Answer(200, root.toString(), 0);
    }

    /** Arguments of {@code create_transaction}. */
    static String booking(String amount, String category, String note, String date) {
        ObjectNode args = MAPPER.createObjectNode();
        args.put("amount", new java.math.BigDecimal(amount));
        args.put("type", "expense");
        args.put("category", category);
        args.put("note", note);
        if (date != null) {
            args.put("date", date);
        }
        return args.toString();
    }

    @Override
    public void close() {
        server.stop(0);
    }
}
