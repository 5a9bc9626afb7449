package dev.leasehold.examples.ledger;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.net.http.HttpTimeoutException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

/**
 * A model behind an OpenAI-compatible chat-completions endpoint ({@code POST {baseUrl}/chat/completions})
 * with tool calling. Failures are {@link ModelException}s that say what went wrong: the endpoint
 * answered an error, did not answer in time, or answered something that is not a chat completion.
 */
public final class OpenAiChatModel implements Model {

    /** The model endpoint failed; the request is recorded as failed and may be resubmitted. */
    public static final class ModelException extends RuntimeException {
        private static final long serialVersionUID = 1L;

        ModelException(String message, Throwable cause) {
            super(message, cause);
        }
    }

    private static final String TOOLS = """
            [{"type":"function","function":{"name":"list_categories","description":"List the ledger's categories",
              "parameters":{"type":"object","properties":{}}}},
             {"type":"function","function":{"name":"create_transaction","description":"Book one expense or income",
              "parameters":{"type":"object","required":["amount","type","category"],"properties":{
                "amount":{"type":"number","exclusiveMinimum":0},
                "type":{"type":"string","enum":["expense","income"]},
                "category":{"type":"string"},"note":{"type":"string"},
                "date":{"type":"string","description":"YYYY-MM-DD in the user's time zone"}}}}}]
            """;

    private final HttpClient http;
    private final URI endpoint;
    private final String model;
    private final String apiKey;
    private final Duration timeout;
    private final ObjectMapper mapper = new ObjectMapper();

    /** A client for {@code baseUrl} (for example {@code https://host/v1}). */
    public OpenAiChatModel(String baseUrl, String model, String apiKey, Duration timeout) {
        this.endpoint = URI.create(baseUrl.replaceAll("/+$", "") + "/chat/completions");
        this.model = model;
        this.apiKey = apiKey;
        this.timeout = timeout;
        this.http = HttpClient.newBuilder().connectTimeout(timeout).build();
    }

    @Override
    public Reply next(String systemPrompt, List<Turn> conversation) {
        String body = request(systemPrompt, conversation);
        HttpResponse<String> response;
        try {
            HttpRequest.Builder request = HttpRequest.newBuilder(endpoint)
                    .timeout(timeout)
                    .header("Content-Type", "application/json")
                    .POST(HttpRequest.BodyPublishers.ofString(body));
            if (apiKey != null && !apiKey.isBlank()) {
                request.header("Authorization", "Bearer " + apiKey);
            }
            response = http.send(request.build(), HttpResponse.BodyHandlers.ofString());
        } catch (HttpTimeoutException e) {
            throw new ModelException("the model did not answer within " + timeout, e);
        } catch (IOException e) {
            throw new ModelException("the model endpoint " + endpoint + " cannot be reached: " + e.getMessage(), e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new ModelException("interrupted while waiting for the model", e);
        }
        if (response.statusCode() / 100 != 2) {
            String text = response.body() == null ? "" : response.body();
            throw new ModelException(
                    "the model answered HTTP " + response.statusCode() + ": "
                            + text.substring(0, Math.min(200, text.length())),
                    null);
        }
        return parse(response.body());
    }

    String request(String systemPrompt, List<Turn> conversation) {
        ObjectNode root = mapper.createObjectNode();
        root.put("model", model);
        ArrayNode messages = root.putArray("messages");
        messages.addObject().put("role", "system").put("content", systemPrompt);
        for (Turn turn : conversation) {
            ObjectNode message = messages.addObject().put("role", turn.role());
            if (turn.role().equals("tool")) {
                message.put("tool_call_id", turn.toolCallId()).put("content", turn.content());
            } else {
                message.put("content", turn.content());
            }
            if (!turn.toolCalls().isEmpty()) {
                ArrayNode calls = message.putArray("tool_calls");
                for (ToolCall call : turn.toolCalls()) {
                    ObjectNode c = calls.addObject().put("id", call.id()).put("type", "function");
                    c.putObject("function").put("name", call.name()).put("arguments", call.argumentsJson());
                }
            }
        }
        try {
            root.set("tools", mapper.readTree(TOOLS));
            return mapper.writeValueAsString(root);
        } catch (IOException e) {
            throw new IllegalStateException(e);
        }
    }

    Reply parse(String body) {
        JsonNode message;
        try {
            message = mapper.readTree(body).path("choices").path(0).path("message");
        } catch (IOException e) {
            throw new ModelException("the model answered something that is not JSON", e);
        }
        if (message.isMissingNode() || !message.isObject()) {
            throw new ModelException("the model's answer has no choices[0].message", null);
        }
        JsonNode content = message.path("content");
        if (!content.isMissingNode() && !content.isNull() && !content.isTextual()) {
            throw new ModelException(
                    "the model's content must be text or null, was "
                            + content.getNodeType().name().toLowerCase(java.util.Locale.ROOT),
                    null);
        }
        JsonNode toolCalls = message.path("tool_calls");
        if (!toolCalls.isMissingNode() && !toolCalls.isNull() && !toolCalls.isArray()) {
            throw new ModelException("the model's tool_calls must be a list", null);
        }
        List<ToolCall> calls = new ArrayList<>();
        for (JsonNode call : toolCalls) {
            JsonNode function = call.path("function");
            JsonNode arguments = function.path("arguments");
            String name =
                    function.path("name").isTextual() ? function.get("name").asText() : null;
            String id = call.path("id").isTextual() ? call.get("id").asText() : null;
            if (name == null || id == null || arguments.isMissingNode() || arguments.isNull()) {
                throw new ModelException("the model sent a tool call without id, name or arguments", null);
            }
            // The protocol sends arguments as a JSON text; some servers send the object itself.
            calls.add(new ToolCall(id, name, arguments.isTextual() ? arguments.asText() : arguments.toString()));
        }
        if (calls.isEmpty() && (content.isMissingNode() || content.isNull())) {
            throw new ModelException("the model sent neither text nor tool calls", null);
        }
        return new Reply(content.isTextual() ? content.asText() : null, calls);
    }
}
