package dev.leasehold.examples.ledger;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.leasehold.LockKey;
import dev.leasehold.idempotency.CanonicalJson;
import dev.leasehold.idempotency.CompletedEffect;
import dev.leasehold.idempotency.EffectResult;
import dev.leasehold.idempotency.IdempotentExecutor;
import dev.leasehold.idempotency.RequestContext;
import dev.leasehold.idempotency.SideEffects;
import dev.leasehold.idempotency.StoredResponse;
import java.math.BigDecimal;
import java.time.Duration;
import java.time.LocalDate;
import java.time.ZoneId;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.springframework.stereotype.Service;

/**
 * One chat message, exactly as seed feature S1.10 describes, on Leasehold:
 *
 * <ol>
 *   <li>the request record (scope: the session; key: the client's request id) decides replay, 409
 *       "request in progress", retry or take-over; a duplicate never touches the running request;
 *   <li>the session lease is taken without waiting, owned by the request's token (409 "session still
 *       has a message in progress"), renewed while the model runs, released in {@code finally};
 *   <li>recovery: a reply already persisted is returned, and side effects already done rebuild the
 *       reply, without calling the model again;
 *   <li>otherwise the agent loop: at most 3 model rounds, ownership asserted before and after each
 *       call; each {@code create_transaction} runs under a side-effect record, the ledger row and the
 *       effect's success mark committing together (S1.9);
 *   <li>the reply is persisted (unique dedupe key) and stored as the request's response.
 * </ol>
 */
@Service
public class ChatService {

    static final int MAX_ROUNDS = 3;

    private final LedgerRepository repository;
    private final IdempotentExecutor executor;
    private final SideEffects effects;
    private final Model model;
    private final ObjectMapper mapper = new ObjectMapper();

    ChatService(LedgerRepository repository, IdempotentExecutor executor, SideEffects effects, Model model) {
        this.repository = repository;
        this.executor = executor;
        this.effects = effects;
        this.model = model;
    }

    /** The answer to a message: the assistant's reply, and whether it was stored before. */
    public record Answer(String reply, boolean replayed) {}

    /** Why a message was refused. */
    public static final class Refused extends RuntimeException {
        private static final long serialVersionUID = 1L;
        final int status;
        final String type;

        Refused(int status, String type, String message) {
            super(message);
            this.status = status;
            this.type = type;
        }
    }

    public Answer send(LedgerRepository.User user, String sessionId, String content, String clientRequestId)
            throws Exception {
        LedgerRepository.Session session = repository
                .session(sessionId)
                .filter(s -> s.userId().equals(user.id()))
                .orElseThrow(
                        () -> new Refused(404, "session-not-found", "chat session " + sessionId + " does not exist"));
        if (session.deleted()) {
            throw new Refused(
                    410, "session-deleted", "chat session " + sessionId + " was deleted and takes no messages");
        }
        String fingerprint = CanonicalJson.fingerprint(mapper.writeValueAsString(Map.of("content", content)));
        IdempotentExecutor.Outcome outcome = executor.execute(
                new IdempotentExecutor.Submission(
                        "session:" + sessionId,
                        clientRequestId,
                        fingerprint,
                        LockKey.of("session", sessionId),
                        Duration.ofSeconds(30)),
                context -> new StoredResponse(200, run(context, user, session, content)));
        if (outcome instanceof IdempotentExecutor.Completed done) {
            return new Answer(done.response().body(), done.replayed());
        }
        if (outcome instanceof IdempotentExecutor.Conflict conflict) {
            throw switch (conflict.reason()) {
                case SESSION_BUSY -> new Refused(409, "session-busy", "session still has a message in progress");
                case TAKEN_OVER -> new Refused(409, "request-taken-over", "request taken over by another execution");
                default -> new Refused(409, "request-in-progress", "request in progress, do not resubmit");
            };
        }
        throw new Refused(
                422, "request-id-reused", "clientRequestId " + clientRequestId + " was used for another message");
    }

    private String run(
            RequestContext context, LedgerRepository.User user, LedgerRepository.Session session, String content)
            throws Exception {
        String requestId = context.request().id();
        String replyKey = "reply:" + requestId;
        var persisted = repository.messageByKey(replyKey);
        if (persisted.isPresent()) {
            return persisted.get(); // the reply was persisted before the request was marked done
        }
        repository.insertMessage(session.id(), "user", content, "user:" + requestId);
        List<CompletedEffect> done = effects.completed(requestId);
        String reply;
        if (!done.isEmpty()) {
            reply = rebuild(done); // the tools ran before a crash: answer from their records, no model call
        } else {
            reply = agent(context, user, session, content);
        }
        repository.insertMessage(session.id(), "assistant", reply, replyKey);
        return reply;
    }

    private String agent(
            RequestContext context, LedgerRepository.User user, LedgerRepository.Session session, String content)
            throws Exception {
        LocalDate today = LocalDate.now(ZoneId.of(user.timeZone()));
        String system = "You are a bookkeeping assistant. today=" + today + " (the user's time zone " + user.timeZone()
                + "). Book expenses and incomes with the tools.";
        List<Model.Turn> conversation = new ArrayList<>();
        conversation.add(Model.Turn.user(content));
        for (int round = 1; round <= MAX_ROUNDS; round++) {
            context.assertOwned();
            Model.Reply reply = model.next(system, conversation);
            context.assertOwned();
            if (reply.toolCalls().isEmpty()) {
                return reply.text();
            }
            conversation.add(new Model.Turn("assistant", reply.text(), reply.toolCalls(), null));
            for (Model.ToolCall call : reply.toolCalls()) {
                conversation.add(Model.Turn.tool(call.id(), tool(context, user, session, call)));
            }
        }
        return "I could not finish within " + MAX_ROUNDS + " steps; what was booked is listed in the ledger.";
    }

    private String tool(
            RequestContext context, LedgerRepository.User user, LedgerRepository.Session session, Model.ToolCall call)
            throws Exception {
        return switch (call.name()) {
            case "list_categories" -> mapper.writeValueAsString(repository.categories(session.ledgerId()));
            case "create_transaction" -> createTransaction(context, user, session, call.argumentsJson());
            default -> mapper.writeValueAsString(Map.of("error", "unknown tool " + call.name()));
        };
    }

    private String createTransaction(
            RequestContext context, LedgerRepository.User user, LedgerRepository.Session session, String argumentsJson)
            throws Exception {
        JsonNode args = mapper.readTree(argumentsJson);
        BigDecimal amount;
        try {
            amount = new BigDecimal(args.path("amount").asText()).setScale(2, java.math.RoundingMode.HALF_EVEN);
        } catch (NumberFormatException e) {
            return mapper.writeValueAsString(Map.of("error", "amount is not a number"));
        }
        String type = args.path("type").asText();
        if (amount.signum() <= 0 || amount.compareTo(new BigDecimal("100000000")) > 0) {
            return mapper.writeValueAsString(
                    Map.of("error", "amount must be greater than 0 and at most 100000000, was " + amount));
        }
        if (!type.equals("expense") && !type.equals("income")) {
            return mapper.writeValueAsString(Map.of("error", "type must be expense or income, was " + type));
        }
        String categoryName = args.path("category").asText();
        List<LedgerRepository.Category> categories = repository.categories(session.ledgerId());
        var category = categories.stream()
                .filter(c -> c.type().equals(type) && c.name().equals(categoryName))
                .findFirst()
                .or(() -> categories.stream()
                        .filter(c -> c.type().equals(type) && c.name().startsWith("其他"))
                        .findFirst())
                .orElseThrow();
        LocalDate date = LocalDate.parse(args.path("date")
                .asText(LocalDate.now(ZoneId.of(user.timeZone())).toString()));
        String note = args.path("note").asText("");
        String requestId = context.request().id();
        EffectResult<Booked> result = effects.runOnce(
                context.request(),
                "create_transaction",
                argumentsJson,
                Booked.class,
                connection -> new Booked(
                        LedgerRepository.book(
                                connection,
                                session.ledgerId(),
                                user.id(),
                                category.id(),
                                type,
                                amount,
                                note,
                                date,
                                requestId),
                        type,
                        amount.toPlainString(),
                        category.name(),
                        note,
                        date.toString()),
                Booked::id);
        return mapper.writeValueAsString(result.value());
    }

    /** A booked transaction, as the tool returns it and its side-effect record stores it. */
    public record Booked(String id, String type, String amount, String category, String note, String date) {}

    private String rebuild(List<CompletedEffect> done) throws Exception {
        List<String> lines = new ArrayList<>();
        for (CompletedEffect effect : done) {
            JsonNode booked = mapper.readTree(effect.resultJson());
            lines.add(booked.path("type").asText() + " " + booked.path("amount").asText() + " "
                    + booked.path("category").asText() + " ("
                    + booked.path("note").asText() + ")");
        }
        return "Booked " + lines.size() + ": " + String.join("; ", lines);
    }
}
