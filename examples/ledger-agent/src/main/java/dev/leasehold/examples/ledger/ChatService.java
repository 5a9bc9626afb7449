package dev.leasehold.examples.ledger;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.leasehold.Lease;
import dev.leasehold.LeaseInfo;
import dev.leasehold.LockKey;
import dev.leasehold.LockService;
import dev.leasehold.idempotency.CanonicalJson;
import dev.leasehold.idempotency.EffectResult;
import dev.leasehold.idempotency.IdempotencyConflictException;
import dev.leasehold.idempotency.IdempotentExecutor;
import dev.leasehold.idempotency.RequestContext;
import dev.leasehold.idempotency.RequestRecords;
import dev.leasehold.idempotency.SideEffectFailedException;
import dev.leasehold.idempotency.SideEffects;
import dev.leasehold.idempotency.StoredResponse;
import java.sql.SQLException;
import java.time.Duration;
import java.time.LocalDate;
import java.time.ZoneId;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import org.springframework.stereotype.Service;

/**
 * One chat message, as seed feature S1.10 describes, on Leasehold:
 *
 * <ol>
 *   <li>the request record (scope: the session; key: the client's request id) decides replay, 409
 *       "request in progress", retry or take-over; a duplicate never touches the running request;
 *   <li>the session lease is taken without waiting, owned by the request's token (409 "session still
 *       has a message in progress"), renewed while the model runs, released in {@code finally}. It
 *       lasts as long as the request's stale threshold, so a crashed request's session is free
 *       exactly when the request may be taken over;
 *   <li>a reply already persisted is returned without calling the model;
 *   <li>otherwise the agent loop, at most 3 rounds. A round whose plan (the model's output: its
 *       tool calls or its final text) was persisted by an earlier execution is resumed from that
 *       plan without calling the model; otherwise ownership of the request is checked in the
 *       database before the model call, and the plan is persisted after it in the transaction that
 *       checks ownership again. Only then do its tool calls run;
 *   <li>each {@code create_transaction} is validated (a mistake is a tool error the model can
 *       correct) and runs under a side-effect record keyed by its round, its position in the round
 *       and its arguments: identical calls are distinct effects, and a resumed round replays the
 *       same ones. The ledger row and the effect's success mark commit together (S1.9);
 *   <li>the reply is persisted (unique dedupe key) and stored as the request's response.
 * </ol>
 *
 * A request is therefore never answered from a part of its effects: every round of its plan runs
 * to the end, and only the model's final text (or the rounds' complete results) answers it.
 */
@Service
public class ChatService {

    static final int MAX_ROUNDS = 3;
    /** The longest reply stored ({@code chat_message.content} is {@code VARCHAR(4000)}). */
    static final int MAX_REPLY = 4000;
    /** The most tool calls one round may ask for. */
    static final int MAX_CALLS_PER_ROUND = 20;

    private final LedgerRepository repository;
    private final IdempotentExecutor executor;
    private final RequestRecords records;
    private final SideEffects effects;
    private final LockService locks;
    private final Model model;
    private final ObjectMapper mapper = new ObjectMapper();

    ChatService(
            LedgerRepository repository,
            IdempotentExecutor executor,
            RequestRecords records,
            SideEffects effects,
            LockService locks,
            Model model) {
        this.repository = repository;
        this.executor = executor;
        this.records = records;
        this.effects = effects;
        this.locks = locks;
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

    /**
     * The ledger database failed while booking, for a reason other than the booking's data (the
     * connection broke, a deadlock): the effect was rolled back and the request can be sent again.
     */
    public static final class BookingFailed extends RuntimeException {
        private static final long serialVersionUID = 1L;

        BookingFailed(String message, Throwable cause) {
            super(message, cause);
        }
    }

    /** The ledger row could not be written; carries the statement's own SQL error out of the effect. */
    static final class LedgerWriteFailed extends Exception {
        private static final long serialVersionUID = 1L;

        LedgerWriteFailed(SQLException cause) {
            super(cause.getMessage(), cause);
        }

        SQLException sql() {
            return (SQLException) getCause();
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
        LockKey sessionKey = LockKey.of("session", sessionId);
        IdempotentExecutor.Outcome outcome = executor.execute(
                new IdempotentExecutor.Submission(
                        "session:" + sessionId, clientRequestId, fingerprint, sessionKey, sessionLease()),
                context -> new StoredResponse(200, run(context, sessionKey, user, session, content)));
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

    /**
     * The session lease lasts as long as a request may go without a heartbeat: when a holder dies,
     * its session lease and its request record become free together, so a resend is never told
     * "session still has a message in progress" by a dead holder's lease after stale-after.
     */
    Duration sessionLease() {
        return records.staleAfter();
    }

    private String run(
            RequestContext context,
            LockKey sessionKey,
            LedgerRepository.User user,
            LedgerRepository.Session session,
            String content)
            throws Exception {
        String requestId = context.request().id();
        String replyKey = "reply:" + requestId;
        var persisted = repository.messageByKey(replyKey);
        if (persisted.isPresent()) {
            return persisted.get(); // the reply was persisted before the request was marked done
        }
        repository.insertMessage(session.id(), "user", content, "user:" + requestId);
        String reply = agent(context, sessionKey, user, session, content);
        repository.insertMessage(session.id(), "assistant", reply, replyKey);
        return reply;
    }

    private String agent(
            RequestContext context,
            LockKey sessionKey,
            LedgerRepository.User user,
            LedgerRepository.Session session,
            String content)
            throws Exception {
        LocalDate today = LocalDate.now(ZoneId.of(user.timeZone()));
        String system = "You are a bookkeeping assistant. today=" + today + " (the user's time zone " + user.timeZone()
                + "). Book expenses and incomes with the tools.";
        String requestId = context.request().id();
        List<String> plans = repository.rounds(requestId);
        List<Model.Turn> conversation = new ArrayList<>();
        conversation.add(Model.Turn.user(content));
        List<String> booked = new ArrayList<>();
        Execution execution = new Execution(context, user, session, today);
        for (int round = 1; round <= MAX_ROUNDS; round++) {
            Model.Reply plan;
            if (round <= plans.size()) {
                plan = mapper.readValue(plans.get(round - 1), Model.Reply.class); // resumed: no model call
            } else {
                assertOwned(context, sessionKey);
                Model.Reply reply = checked(model.next(system, conversation));
                plan = persist(context, sessionKey, round, reply);
            }
            if (plan.toolCalls().isEmpty()) {
                return plan.text();
            }
            conversation.add(new Model.Turn("assistant", plan.text(), plan.toolCalls(), null));
            for (int position = 0; position < plan.toolCalls().size(); position++) {
                Model.ToolCall call = plan.toolCalls().get(position);
                String result = tool(execution, round, position, call, booked);
                conversation.add(Model.Turn.tool(call.id(), result));
            }
        }
        String unfinished = "I could not finish within " + MAX_ROUNDS + " steps. Booked " + booked.size()
                + (booked.isEmpty() ? "." : ": " + String.join("; ", booked));
        return unfinished.length() <= MAX_REPLY ? unfinished : unfinished.substring(0, MAX_REPLY - 1) + "…";
    }

    /**
     * Ownership, checked in the database (S1.10): the request record still PROCESSING under this
     * execution's token (one statement), and the session lease still this execution's in the lock
     * store. The executor's own heartbeat only notices a take-over every third of stale-after.
     */
    private void assertOwned(RequestContext context, LockKey sessionKey) {
        context.assertOwned();
        if (!repository.ownsRequest(context.request().id(), context.request().token())) {
            throw takenOver(context);
        }
        assertSessionLease(context, sessionKey);
    }

    private void assertSessionLease(RequestContext context, LockKey sessionKey) {
        Optional<Lease> held = context.session();
        if (held.isEmpty()) {
            return;
        }
        Optional<LeaseInfo> current = locks.inspect(sessionKey);
        if (current.isEmpty() || !current.get().ownerToken().equals(held.get().ownerToken())) {
            throw new IdempotencyConflictException(
                    IdempotencyConflictException.Reason.TAKEN_OVER,
                    "the session lease of request " + context.request().clientKey()
                            + " is no longer this execution's; it was stopped");
        }
    }

    private static IdempotencyConflictException takenOver(RequestContext context) {
        return new IdempotencyConflictException(
                IdempotencyConflictException.Reason.TAKEN_OVER,
                "request " + context.request().clientKey() + " was taken over by another execution; it was stopped");
    }

    /**
     * Persists a round's plan under the request, checking ownership in the same transaction; if an
     * earlier owner persisted this round first, its plan is the one that runs.
     */
    private Model.Reply persist(RequestContext context, LockKey sessionKey, int round, Model.Reply reply)
            throws Exception {
        context.assertOwned();
        String requestId = context.request().id();
        switch (repository.saveRound(requestId, context.request().token(), round, mapper.writeValueAsString(reply))) {
            case SAVED -> {
                assertSessionLease(context, sessionKey);
                return reply;
            }
            case ALREADY_PERSISTED -> {
                List<String> plans = repository.rounds(requestId);
                return mapper.readValue(plans.get(round - 1), Model.Reply.class);
            }
            default -> throw takenOver(context);
        }
    }

    /** Checks what any model answered; a reply the chat cannot use is a 502 that names the problem. */
    static Model.Reply checked(Model.Reply reply) {
        if (reply == null) {
            throw new OpenAiChatModel.ModelException("the model answered nothing", null);
        }
        List<Model.ToolCall> calls = reply.toolCalls() == null ? List.of() : reply.toolCalls();
        if (calls.isEmpty() && (reply.text() == null || reply.text().isBlank())) {
            throw new OpenAiChatModel.ModelException("the model sent neither text nor tool calls", null);
        }
        if (reply.text() != null && reply.text().length() > MAX_REPLY) {
            throw new OpenAiChatModel.ModelException(
                    "the model's text must be at most " + MAX_REPLY + " characters, was "
                            + reply.text().length(),
                    null);
        }
        if (calls.size() > MAX_CALLS_PER_ROUND) {
            throw new OpenAiChatModel.ModelException(
                    "the model asked for " + calls.size() + " tool calls in one round; at most " + MAX_CALLS_PER_ROUND,
                    null);
        }
        java.util.Set<String> ids = new java.util.HashSet<>();
        for (Model.ToolCall call : calls) {
            if (call == null
                    || call.id() == null
                    || call.id().isBlank()
                    || call.id().length() > 200
                    || call.name() == null
                    || call.name().isBlank()
                    || call.name().length() > 100
                    || call.argumentsJson() == null) {
                throw new OpenAiChatModel.ModelException(
                        "the model sent a tool call without a usable id, name or arguments", null);
            }
            if (!ids.add(call.id())) {
                // Its result could not be told apart from the other call's: the model would be answered twice.
                throw new OpenAiChatModel.ModelException(
                        "the model sent two tool calls with the same id " + BookingArguments.quote(call.id(), 40)
                                + " in one reply; every call needs its own",
                        null);
            }
        }
        return new Model.Reply(reply.text(), List.copyOf(calls));
    }

    /** What every tool call of one execution shares. */
    private record Execution(
            RequestContext context, LedgerRepository.User user, LedgerRepository.Session session, LocalDate today) {}

    private String tool(Execution execution, int round, int position, Model.ToolCall call, List<String> booked)
            throws Exception {
        return switch (call.name()) {
            case "list_categories" ->
                mapper.writeValueAsString(
                        repository.categories(execution.session().ledgerId()));
            case "create_transaction" -> {
                try {
                    Booked done = createTransaction(execution, round, position, call);
                    booked.add(done.type() + " " + done.amount() + " " + done.category() + " (" + done.note() + ")");
                    yield mapper.writeValueAsString(done);
                } catch (BookingArguments.Invalid e) {
                    yield error(e.getMessage());
                }
            }
            default ->
                error("unknown tool " + BookingArguments.quote(call.name(), 40)
                        + "; the tools are list_categories and create_transaction");
        };
    }

    private String error(String message) throws Exception {
        return mapper.writeValueAsString(Map.of("error", message));
    }

    private Booked createTransaction(Execution execution, int round, int position, Model.ToolCall call)
            throws Exception {
        RequestContext context = execution.context();
        LedgerRepository.Session session = execution.session();
        LedgerRepository.User user = execution.user();
        LocalDate today = execution.today();
        ObjectNode args = BookingArguments.object(call.argumentsJson());
        BookingArguments.Booking booking =
                BookingArguments.booking(args, repository.categories(session.ledgerId()), today);
        // The effect's identity: its round, its position in the round's persisted plan, its
        // arguments. Two identical calls are two effects; the same plan run again replays both.
        ObjectNode identity = mapper.createObjectNode().put("round", round).put("call", position);
        identity.set("arguments", args);
        String requestId = context.request().id();
        EffectResult<Booked> result;
        try {
            result = effects.runOnce(
                    context.request(),
                    "create_transaction",
                    identity.toString(),
                    Booked.class,
                    connection -> {
                        try {
                            return new Booked(
                                    LedgerRepository.book(
                                            connection,
                                            session.ledgerId(),
                                            user.id(),
                                            booking.category().id(),
                                            booking.type(),
                                            booking.amount(),
                                            booking.note(),
                                            booking.date(),
                                            requestId),
                                    booking.type(),
                                    booking.amount().toPlainString(),
                                    booking.category().name(),
                                    booking.note(),
                                    booking.date().toString());
                        } catch (SQLException e) {
                            // Keep the booking's own SQL error apart from the record store's.
                            throw new LedgerWriteFailed(e);
                        }
                    },
                    Booked::id);
        } catch (SideEffectFailedException e) {
            if (e.getCause() instanceof LedgerWriteFailed failed) {
                throw refusedOrFailed(failed.sql());
            }
            throw e;
        }
        return result.value();
    }

    /**
     * The booking's own SQL error: a data or constraint error (SQLState class 22 or 23) is the
     * ledger refusing these values, which the model can correct; anything else is a database
     * failure that a resend retries.
     */
    private static Exception refusedOrFailed(SQLException e) {
        String state = e.getSQLState() == null ? "" : e.getSQLState();
        if (state.startsWith("22") || state.startsWith("23")) {
            return new BookingArguments.Invalid(
                    "the ledger refused the booking: " + BookingArguments.quote(e.getMessage(), 160));
        }
        return new BookingFailed(
                "the ledger database failed while booking (SQLState " + state + "): "
                        + BookingArguments.quote(e.getMessage(), 200)
                        + "; nothing was booked and the message can be sent again with the same clientRequestId",
                e);
    }

    /** A booked transaction, as the tool returns it and its side-effect record stores it. */
    public record Booked(String id, String type, String amount, String category, String note, String date) {}
}
