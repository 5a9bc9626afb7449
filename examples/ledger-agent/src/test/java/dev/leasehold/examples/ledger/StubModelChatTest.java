package dev.leasehold.examples.ledger;

import static dev.leasehold.examples.ledger.ChatHttp.booked;
import static dev.leasehold.examples.ledger.StubModel.booking;
import static dev.leasehold.examples.ledger.StubModel.error;
import static dev.leasehold.examples.ledger.StubModel.text;
import static dev.leasehold.examples.ledger.StubModel.toolCalls;
import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.time.LocalDate;
import java.time.ZoneId;
import java.util.List;
import java.util.UUID;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.web.server.LocalServerPort;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.test.context.DynamicPropertyRegistry;
import org.springframework.test.context.DynamicPropertySource;
import org.springframework.web.client.RestClient;

/**
 * The chat against an OpenAI-compatible model over HTTP (a local stub that fails, delays and returns
 * chosen tool calls): recovery resumes the persisted plan, identical calls are distinct bookings,
 * every bad tool argument is a tool error the model can correct, and bad model replies are 502.
 */
@SpringBootTest(
        webEnvironment = SpringBootTest.WebEnvironment.RANDOM_PORT,
        properties = {
            "spring.datasource.url=jdbc:h2:mem:ledger-stub;DB_CLOSE_DELAY=-1",
            "leasehold.idempotency.stale-after=2s",
            "ledger.model.timeout=5s"
        })
class StubModelChatTest {

    static final StubModel STUB = new StubModel();
    private static final ObjectMapper MAPPER = new ObjectMapper();

    @DynamicPropertySource
    static void model(DynamicPropertyRegistry registry) {
        registry.add("ledger.model.base-url", STUB::baseUrl);
    }

    @AfterAll
    static void stop() {
        STUB.close();
    }

    @LocalServerPort
    int port;

    @Autowired
    JdbcTemplate jdbc;

    RestClient alice;
    String session;
    String id;

    @BeforeEach
    void session() {
        STUB.reset();
        alice = ChatHttp.as(port, "alice-token");
        session = ChatHttp.newSession(alice, "alice-ledger");
        id = "req-" + UUID.randomUUID();
    }

    private ChatHttp.Result send(String content) {
        return ChatHttp.send(alice, session, content, id);
    }

    // ------------------------------------------------------------ 1. recovery resumes the plan

    @Test
    void aModelFailureAfterTheFirstRoundsBookingIsResumedAndEveryItemIsBookedOnce() {
        STUB.on(1, (r, attempt) -> toolCalls("c1", "create_transaction", booking("20", "餐饮", "lunch", null)))
                .on(
                        2,
                        (r, attempt) -> attempt == 1
                                ? error(500, "overloaded")
                                : toolCalls("c2", "create_transaction", booking("30", "交通", "taxi", null)))
                .on(3, (r, attempt) -> text("Booked lunch 20 and taxi 30"));

        ChatHttp.Result failed = send("lunch 20, taxi 30");
        assertThat(failed.status()).as(failed.body()).isEqualTo(502);
        assertThat(booked(jdbc, id)).isEqualTo(1);

        ChatHttp.Result resent = send("lunch 20, taxi 30");
        assertThat(resent.status()).as(resent.body()).isEqualTo(200);
        assertThat(resent.body()).contains("Booked lunch 20 and taxi 30");
        assertThat(booked(jdbc, id, "lunch")).as("lunch once").isEqualTo(1);
        assertThat(booked(jdbc, id, "taxi")).as("taxi once, not dropped").isEqualTo(1);
        assertThat(STUB.asked(1)).as("round 1 was persisted: not asked again").isEqualTo(1);
        assertThat(STUB.asked(2)).as("round 2 was not persisted: asked again").isEqualTo(2);
        assertThat(send("lunch 20, taxi 30").replayed()).isTrue();
    }

    @Test
    void aFailureAfterThePlanOfTheLastRoundIsAnsweredFromThatPlanNotFromThePartialEffects() {
        // Round 2's plan is persisted and run; the model then fails on round 3 twice before it answers.
        STUB.on(1, (r, attempt) -> toolCalls("c1", "create_transaction", booking("20", "餐饮", "lunch", null)))
                .on(2, (r, attempt) -> toolCalls("c2", "create_transaction", booking("30", "交通", "taxi", null)))
                .on(3, (r, attempt) -> attempt <= 2 ? error(503, "busy") : text("all booked"));
        assertThat(send("lunch 20, taxi 30").status()).isEqualTo(502);
        assertThat(send("lunch 20, taxi 30").status()).isEqualTo(502);
        ChatHttp.Result answered = send("lunch 20, taxi 30");
        assertThat(answered.status()).isEqualTo(200);
        assertThat(answered.body()).contains("all booked");
        assertThat(booked(jdbc, id)).isEqualTo(2);
        assertThat(STUB.asked(1)).isEqualTo(1);
        assertThat(STUB.asked(2)).isEqualTo(1);
        assertThat(STUB.asked(3)).isEqualTo(3);
    }

    // ------------------------------------------------------------ 2. identical items

    @Test
    void twoIdenticalCallsWithDistinctIdsAreTwoBookings() throws Exception {
        String coffee = booking("5", "餐饮", "coffee", null);
        STUB.on(1, (r, attempt) -> toolCalls("c1", "create_transaction", coffee, "c2", "create_transaction", coffee))
                .on(2, (r, attempt) -> text("two coffees"));
        ChatHttp.Result result = send("coffee 5, coffee 5");
        assertThat(result.status()).as(result.body()).isEqualTo(200);
        assertThat(booked(jdbc, id)).isEqualTo(2);
        List<String> results = STUB.toolResultsSentIn(2);
        assertThat(results).hasSize(2);
        assertThat(MAPPER.readTree(results.get(0)).path("id").asText())
                .isNotBlank()
                .isNotEqualTo(MAPPER.readTree(results.get(1)).path("id").asText());
    }

    @Test
    void aReplyWithTwoToolCallsSharingOneIdIsRefusedAndBooksNothing() {
        String coffee = booking("5", "餐饮", "coffee", null);
        String tea = booking("6", "餐饮", "tea", null);
        STUB.on(1, (r, attempt) -> toolCalls("c1", "create_transaction", coffee, "c1", "create_transaction", tea))
                .on(2, (r, attempt) -> text("booked"));
        ChatHttp.Result result = send("coffee 5, tea 6");
        assertThat(result.status()).as(result.body()).isEqualTo(502);
        assertThat(result.body()).contains("same id").contains("c1").contains("same clientRequestId");
        assertThat(booked(jdbc, id)).isZero();
        assertThat(STUB.asked(2)).as("no tool ran, so no second round").isZero();
    }

    @Test
    void aRetriedRoundReplaysTheSameTwoIdenticalBookings() {
        String coffee = booking("5", "餐饮", "coffee", null);
        STUB.on(1, (r, attempt) -> toolCalls("c1", "create_transaction", coffee, "c2", "create_transaction", coffee))
                .on(2, (r, attempt) -> attempt == 1 ? error(500, "down") : text("two coffees"));
        assertThat(send("coffee 5, coffee 5").status()).isEqualTo(502);
        assertThat(booked(jdbc, id)).isEqualTo(2);
        ChatHttp.Result resent = send("coffee 5, coffee 5");
        assertThat(resent.status()).isEqualTo(200);
        assertThat(booked(jdbc, id))
                .as("the same two effects replayed, none added")
                .isEqualTo(2);
    }

    // ------------------------------------------------------------ 3. tool arguments and replies

    @ParameterizedTest(name = "{0}")
    @CsvSource(
            delimiter = '|',
            quoteCharacter = '`',
            value = {
                "date in words the model does not know | {\"amount\":12,\"type\":\"expense\",\"category\":\"餐饮\",\"note\":\"x\",\"date\":\"next week\"} | date must be",
                "impossible date | {\"amount\":12,\"type\":\"expense\",\"category\":\"餐饮\",\"note\":\"x\",\"date\":\"2026-13-45\"} | date must be",
                "not JSON | amount twelve please | arguments must be a JSON object",
                "JSON but an array | [12, \"expense\"] | arguments must be a JSON object",
                "note too long | {\"amount\":12,\"type\":\"expense\",\"category\":\"餐饮\",\"note\":\"NOTE300\"} | note must be at most 200 characters",
                "category missing | {\"amount\":12,\"type\":\"expense\",\"note\":\"x\"} | category is missing",
                "category unknown | {\"amount\":12,\"type\":\"expense\",\"category\":\"宠物\",\"note\":\"x\"} | does not exist for expense; the expense categories are: 交通, 其他, 购物, 餐饮",
                "category of the other type | {\"amount\":12,\"type\":\"expense\",\"category\":\"工资\",\"note\":\"x\"} | does not exist for expense",
                "amount with a huge exponent | {\"amount\":1e1000000,\"type\":\"expense\",\"category\":\"餐饮\"} | amount must be",
                "amount as a huge string | {\"amount\":\"1e1000000\",\"type\":\"expense\",\"category\":\"餐饮\"} | amount must be",
                "amount as an object | {\"amount\":{\"value\":12},\"type\":\"expense\",\"category\":\"餐饮\"} | amount must be",
                "amount with three decimals | {\"amount\":1.005,\"type\":\"expense\",\"category\":\"餐饮\"} | at most 2 decimals",
                "type unknown | {\"amount\":12,\"type\":\"transfer\",\"category\":\"餐饮\"} | type must be expense or income",
            })
    void everyBadToolArgumentIsAToolErrorTheModelCanCorrect(String name, String arguments, String expected) {
        String args = arguments.replace("NOTE300", "n".repeat(300));
        STUB.on(1, (r, attempt) -> toolCalls("c1", "create_transaction", args))
                .on(2, (r, attempt) -> text("could not book"));
        ChatHttp.Result result = send("book it");
        assertThat(result.status()).as(result.body()).isEqualTo(200);
        assertThat(booked(jdbc, id)).isZero();
        List<String> results = STUB.toolResultsSentIn(2);
        assertThat(results).singleElement().satisfies(toolResult -> {
            assertThat(toolResult).contains("\"error\"").contains(expected);
            assertThat(toolResult.length()).as("a short error, not an echo").isLessThan(600);
        });
    }

    @ParameterizedTest(name = "{0}")
    @CsvSource({"yesterday, 1", "昨天, 1", "前天, 2", "today, 0", "今天, 0"})
    void theRelativeDatesTheEmbeddedModelKnowsAreBooked(String word, int daysAgo) {
        STUB.on(1, (r, attempt) -> toolCalls("c1", "create_transaction", booking("8", "交通", "bus", word)))
                .on(2, (r, attempt) -> text("booked"));
        ChatHttp.Result result = send("bus 8 " + word);
        assertThat(result.status()).as(result.body()).isEqualTo(200);
        LocalDate expected = LocalDate.now(ZoneId.of("Asia/Shanghai")).minusDays(daysAgo);
        assertThat(jdbc.queryForObject(
                        "SELECT t.occurred_on FROM ledger_tx t JOIN leasehold_request r ON r.id = t.request_id"
                                + " WHERE r.client_key = ?",
                        LocalDate.class,
                        id))
                .isEqualTo(expected);
    }

    @ParameterizedTest(name = "{0}")
    @CsvSource(
            delimiter = '|',
            quoteCharacter = '`',
            value = {
                "content is a number | {\"role\":\"assistant\",\"content\":42} | content must be text",
                "content too long | {\"role\":\"assistant\",\"content\":\"LONG\"} | at most 4000 characters",
                "content blank | {\"role\":\"assistant\",\"content\":\"  \"} | neither text nor tool calls",
                "tool calls not a list | {\"role\":\"assistant\",\"content\":null,\"tool_calls\":{\"id\":\"x\"}} | tool_calls must be a list",
            })
    void modelRepliesThatCannotBeUsedAre502WithAClearMessage(String name, String message, String expected) {
        String json = message.replace("LONG", "x".repeat(4001));
        STUB.on(1, (r, attempt) -> StubModel.message(json));
        ChatHttp.Result result = send("lunch 5");
        assertThat(result.status()).as(result.body()).isEqualTo(502);
        assertThat(result.body()).contains(expected).contains("same clientRequestId");
    }

    @Test
    void anEffectsOwnSqlErrorIsReportedAsWhatItIsNotAsALockStoreOutage() throws Exception {
        jdbc.execute(
                "ALTER TABLE ledger_tx ADD CONSTRAINT ledger_tx_test_refuses CHECK (note <> 'refused by the ledger')");
        try {
            STUB.on(
                            1,
                            (r, attempt) -> toolCalls(
                                    "c1", "create_transaction", booking("9", "餐饮", "refused by the ledger", null)))
                    .on(2, (r, attempt) -> text("not booked"));
            ChatHttp.Result result = send("lunch 9");
            assertThat(result.status()).as(result.body()).isEqualTo(200);
            assertThat(result.body()).doesNotContain("lock store");
            JsonNode toolResult = MAPPER.readTree(STUB.toolResultsSentIn(2).get(0));
            assertThat(toolResult.path("error").asText()).contains("the ledger refused the booking");
            assertThat(booked(jdbc, id)).isZero();
        } finally {
            jdbc.execute("ALTER TABLE ledger_tx DROP CONSTRAINT ledger_tx_test_refuses");
        }
    }
}
