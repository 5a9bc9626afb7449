package dev.leasehold.examples.ledger;

import jakarta.servlet.http.HttpServletRequest;
import jakarta.validation.Valid;
import jakarta.validation.constraints.NotBlank;
import jakarta.validation.constraints.Pattern;
import jakarta.validation.constraints.Size;
import java.net.URI;
import java.util.List;
import java.util.Map;
import org.springframework.http.HttpStatusCode;
import org.springframework.http.ProblemDetail;
import org.springframework.http.ResponseEntity;
import org.springframework.web.bind.MethodArgumentNotValidException;
import org.springframework.web.bind.annotation.DeleteMapping;
import org.springframework.web.bind.annotation.ExceptionHandler;
import org.springframework.web.bind.annotation.GetMapping;
import org.springframework.web.bind.annotation.PathVariable;
import org.springframework.web.bind.annotation.PostMapping;
import org.springframework.web.bind.annotation.RequestBody;
import org.springframework.web.bind.annotation.RequestMapping;
import org.springframework.web.bind.annotation.RestController;

/** The chat API; every call needs {@code Authorization: Bearer <token>}. */
@RestController
@RequestMapping("/api")
class Api {

    static final String USER = "ledger.user";

    record NewSession(
            @NotBlank String ledgerId,
            @NotBlank @Size(max = 100) String title) {}

    record NewMember(
            @NotBlank
            @Size(max = 32)
            @Pattern(regexp = "[A-Za-z0-9_\\-]+", message = "must be letters, digits, '_' or '-'")
            String userId) {}

    record NewMessage(
            @NotBlank @Size(max = 2000) String content,

            @NotBlank
            @Pattern(regexp = "[A-Za-z0-9_\\-]{8,64}", message = "must be 8 to 64 letters, digits, '_' or '-'")
            String clientRequestId) {}

    private final LedgerRepository repository;
    private final ChatService chat;

    Api(LedgerRepository repository, ChatService chat) {
        this.repository = repository;
        this.chat = chat;
    }

    private static LedgerRepository.User user(HttpServletRequest request) {
        return (LedgerRepository.User) request.getAttribute(USER);
    }

    @GetMapping("/ledgers")
    List<LedgerRepository.Ledger> ledgers(HttpServletRequest request) {
        return repository.ledgers(user(request).id());
    }

    @GetMapping("/ledgers/{id}/transactions")
    List<LedgerRepository.Transaction> transactions(HttpServletRequest request, @PathVariable String id) {
        member(request, id);
        return repository.transactions(id);
    }

    @GetMapping("/ledgers/{id}/members")
    List<LedgerRepository.Member> members(HttpServletRequest request, @PathVariable String id) {
        member(request, id);
        return repository.members(id);
    }

    /**
     * Shares a ledger (S1.15): its owner adds a member by user id; members book and read it. Adding
     * a member twice is one membership. A non-member gets 404 (the ledger's existence is not told),
     * a member who is not the owner 403.
     */
    @PostMapping("/ledgers/{id}/members")
    List<LedgerRepository.Member> addMember(
            HttpServletRequest request, @PathVariable String id, @Valid @RequestBody NewMember body) {
        member(request, id);
        if (!repository.ledgerOwner(id).orElse("").equals(user(request).id())) {
            throw new ChatService.Refused(403, "not-ledger-owner", "only the owner of ledger " + id + " adds members");
        }
        if (!repository.userExists(body.userId())) {
            throw new ChatService.Refused(404, "user-not-found", "user " + body.userId() + " does not exist");
        }
        repository.addMember(id, body.userId());
        return repository.members(id);
    }

    private void member(HttpServletRequest request, String ledgerId) {
        if (!repository.isMember(ledgerId, user(request).id())) {
            throw new ChatService.Refused(404, "ledger-not-found", "ledger " + ledgerId + " does not exist");
        }
    }

    @GetMapping("/sessions")
    List<LedgerRepository.Session> sessions(HttpServletRequest request) {
        return repository.sessions(user(request).id());
    }

    @PostMapping("/sessions")
    LedgerRepository.Session newSession(HttpServletRequest request, @Valid @RequestBody NewSession body) {
        member(request, body.ledgerId());
        return repository.insertSession(user(request).id(), body.ledgerId(), body.title());
    }

    @DeleteMapping("/sessions/{id}")
    ResponseEntity<Void> deleteSession(HttpServletRequest request, @PathVariable String id) {
        ownSession(request, id);
        repository.deleteSession(id);
        return ResponseEntity.noContent().build();
    }

    @GetMapping("/sessions/{id}/messages")
    List<LedgerRepository.Message> messages(HttpServletRequest request, @PathVariable String id) {
        ownSession(request, id);
        return repository.messages(id);
    }

    @PostMapping("/sessions/{id}/messages")
    ResponseEntity<Map<String, Object>> send(
            HttpServletRequest request, @PathVariable String id, @Valid @RequestBody NewMessage body) throws Exception {
        ChatService.Answer answer = chat.send(user(request), id, body.content(), body.clientRequestId());
        ResponseEntity.BodyBuilder ok = ResponseEntity.ok();
        if (answer.replayed()) {
            ok.header("Idempotent-Replayed", "true");
        }
        return ok.body(Map.of("reply", answer.reply()));
    }

    private void ownSession(HttpServletRequest request, String id) {
        repository
                .session(id)
                .filter(s -> s.userId().equals(user(request).id()))
                .orElseThrow(() ->
                        new ChatService.Refused(404, "session-not-found", "chat session " + id + " does not exist"));
    }

    @ExceptionHandler(ChatService.Refused.class)
    ResponseEntity<ProblemDetail> refused(ChatService.Refused e) {
        ProblemDetail problem = ProblemDetail.forStatusAndDetail(HttpStatusCode.valueOf(e.status), e.getMessage());
        problem.setType(URI.create("https://leasehold.dev/problems/ledger/" + e.type));
        problem.setTitle(e.getMessage());
        ResponseEntity.BodyBuilder response = ResponseEntity.status(e.status);
        if (e.status == 409) {
            response.header("Retry-After", "1");
        }
        return response.body(problem);
    }

    @ExceptionHandler(OpenAiChatModel.ModelException.class)
    ResponseEntity<ProblemDetail> modelFailed(OpenAiChatModel.ModelException e) {
        ProblemDetail problem = ProblemDetail.forStatusAndDetail(
                HttpStatusCode.valueOf(502),
                e.getMessage() + "; the message was not answered and can be sent again with the same clientRequestId");
        problem.setType(URI.create("https://leasehold.dev/problems/ledger/model-failed"));
        return ResponseEntity.status(502).body(problem);
    }

    @ExceptionHandler(ChatService.BookingFailed.class)
    ResponseEntity<ProblemDetail> bookingFailed(ChatService.BookingFailed e) {
        ProblemDetail problem = ProblemDetail.forStatusAndDetail(HttpStatusCode.valueOf(500), e.getMessage());
        problem.setType(URI.create("https://leasehold.dev/problems/ledger/booking-failed"));
        return ResponseEntity.status(500).body(problem);
    }

    @ExceptionHandler(MethodArgumentNotValidException.class)
    ResponseEntity<ProblemDetail> invalid(MethodArgumentNotValidException e) {
        String detail = e.getBindingResult().getFieldErrors().stream()
                .map(f -> f.getField() + ": " + f.getDefaultMessage())
                .sorted()
                .reduce((a, b) -> a + "; " + b)
                .orElse("invalid request");
        ProblemDetail problem = ProblemDetail.forStatusAndDetail(HttpStatusCode.valueOf(400), detail);
        problem.setType(URI.create("https://leasehold.dev/problems/ledger/invalid-request"));
        return ResponseEntity.badRequest().body(problem);
    }
}
