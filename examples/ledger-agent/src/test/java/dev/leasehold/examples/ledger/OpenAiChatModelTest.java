package dev.leasehold.examples.ledger;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.sun.net.httpserver.HttpServer;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/** The chat-completions client against a local server that speaks the protocol. */
class OpenAiChatModelTest {

    private HttpServer server;
    private final AtomicReference<String> received = new AtomicReference<>();
    private volatile int status = 200;
    private volatile String answer = "";
    private volatile long delayMillis;

    @BeforeEach
    void start() throws IOException {
        server = HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 0);
        server.createContext("/v1/chat/completions", exchange -> {
            received.set(new String(exchange.getRequestBody().readAllBytes(), StandardCharsets.UTF_8));
            try {
                Thread.sleep(delayMillis);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
            byte[] body = answer.getBytes(StandardCharsets.UTF_8);
            exchange.getResponseHeaders().add("Content-Type", "application/json");
            exchange.sendResponseHeaders(status, body.length);
            exchange.getResponseBody().write(body);
            exchange.close();
        });
        server.start();
    }

    @AfterEach
    void stop() {
        server.stop(0);
    }

    private OpenAiChatModel model(Duration timeout) {
        return new OpenAiChatModel(
                "http://127.0.0.1:" + server.getAddress().getPort() + "/v1/", "test-model", "k-123", timeout);
    }

    @Test
    void toolCallRepliesAreReadAndTheConversationIsSentInTheProtocol() throws Exception {
        answer = """
                {"choices":[{"message":{"role":"assistant","content":null,"tool_calls":[
                  {"id":"c1","type":"function","function":{"name":"create_transaction",
                   "arguments":"{\\"amount\\":35,\\"type\\":\\"expense\\",\\"category\\":\\"餐饮\\"}"}}]}}]}
                """;
        List<Model.Turn> conversation = List.of(
                Model.Turn.user("中午吃粉花了35"),
                new Model.Turn("assistant", null, List.of(new Model.ToolCall("c0", "list_categories", "{}")), null),
                Model.Turn.tool("c0", "[{\"name\":\"餐饮\"}]"));
        Model.Reply reply = model(Duration.ofSeconds(5)).next("today=2026-11-29", conversation);

        assertThat(reply.toolCalls()).singleElement().satisfies(call -> {
            assertThat(call.id()).isEqualTo("c1");
            assertThat(call.name()).isEqualTo("create_transaction");
            assertThat(call.argumentsJson()).contains("\"amount\":35");
        });
        JsonNode sent = new ObjectMapper().readTree(received.get());
        assertThat(sent.path("model").asText()).isEqualTo("test-model");
        assertThat(sent.path("messages")).hasSize(4);
        assertThat(sent.path("messages").get(0).path("content").asText()).contains("today=2026-11-29");
        assertThat(sent.path("messages")
                        .get(2)
                        .path("tool_calls")
                        .get(0)
                        .path("function")
                        .path("name")
                        .asText())
                .isEqualTo("list_categories");
        assertThat(sent.path("messages").get(3).path("tool_call_id").asText()).isEqualTo("c0");
        assertThat(sent.path("tools")).hasSize(2);
    }

    @Test
    void aFinalTextReplyHasNoToolCalls() {
        answer = "{\"choices\":[{\"message\":{\"role\":\"assistant\",\"content\":\"Booked 1: lunch 35\"}}]}";
        Model.Reply reply = model(Duration.ofSeconds(5)).next("s", List.of(Model.Turn.user("lunch 35")));
        assertThat(reply.toolCalls()).isEmpty();
        assertThat(reply.text()).isEqualTo("Booked 1: lunch 35");
    }

    @Test
    void aSlowModelIsATimeoutNotAHang() {
        delayMillis = 1500;
        answer = "{\"choices\":[{\"message\":{\"content\":\"late\"}}]}";
        assertThatThrownBy(() -> model(Duration.ofMillis(300)).next("s", List.of(Model.Turn.user("x"))))
                .isInstanceOf(OpenAiChatModel.ModelException.class)
                .hasMessageContaining("did not answer within");
    }

    @Test
    void malformedRepliesAndErrorsSayWhatWentWrong() {
        answer = "{not json";
        assertThatThrownBy(() -> model(Duration.ofSeconds(5)).next("s", List.of(Model.Turn.user("x"))))
                .hasMessageContaining("not JSON");
        answer = "{\"id\":\"x\"}";
        assertThatThrownBy(() -> model(Duration.ofSeconds(5)).next("s", List.of(Model.Turn.user("x"))))
                .hasMessageContaining("no choices[0].message");
        answer =
                "{\"choices\":[{\"message\":{\"tool_calls\":[{\"type\":\"function\",\"function\":{\"name\":\"x\"}}]}}]}";
        assertThatThrownBy(() -> model(Duration.ofSeconds(5)).next("s", List.of(Model.Turn.user("x"))))
                .hasMessageContaining("without id, name or arguments");
        status = 503;
        answer = "{\"error\":\"overloaded\"}";
        assertThatThrownBy(() -> model(Duration.ofSeconds(5)).next("s", List.of(Model.Turn.user("x"))))
                .hasMessageContaining("HTTP 503")
                .hasMessageContaining("overloaded");
    }
}
