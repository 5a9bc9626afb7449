package dev.leasehold.examples.loan;

import dev.leasehold.examples.loan.Domain.Channel;
import dev.leasehold.examples.loan.Domain.Conservation;
import dev.leasehold.examples.loan.Domain.Note;
import dev.leasehold.examples.loan.Domain.NoteView;
import dev.leasehold.examples.loan.Domain.Receipt;
import jakarta.validation.Valid;
import jakarta.validation.constraints.DecimalMin;
import jakarta.validation.constraints.Digits;
import jakarta.validation.constraints.Max;
import jakarta.validation.constraints.Min;
import jakarta.validation.constraints.NotBlank;
import jakarta.validation.constraints.NotEmpty;
import jakarta.validation.constraints.NotNull;
import jakarta.validation.constraints.Pattern;
import jakarta.validation.constraints.Size;
import java.math.BigDecimal;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.time.LocalDate;
import java.util.HexFormat;
import java.util.List;
import org.springframework.dao.DuplicateKeyException;
import org.springframework.http.ResponseEntity;
import org.springframework.security.core.Authentication;
import org.springframework.web.bind.annotation.GetMapping;
import org.springframework.web.bind.annotation.PathVariable;
import org.springframework.web.bind.annotation.PostMapping;
import org.springframework.web.bind.annotation.RequestBody;
import org.springframework.web.bind.annotation.RequestHeader;
import org.springframework.web.bind.annotation.RequestMapping;
import org.springframework.web.bind.annotation.RequestParam;
import org.springframework.web.bind.annotation.RestController;

/**
 * The credit core's REST API. The tenant in the path must be the caller's ({@link LoanSecurity});
 * an unknown note is a 404, answered before anything is locked. Repayments are idempotent by their
 * trade number, operator commands by their {@code Idempotency-Key}.
 */
@RestController
@RequestMapping("/api/tenants/{tenant}")
class LoanController {

    static final String TRADE_NO = "[A-Za-z0-9_\\-]{1,64}";
    static final String KEY = "[A-Za-z0-9_\\-:.]{1,100}";
    static final String DUPLICATE_HEADER = "Repayment-Duplicate";

    record RepayRequest(
            @NotNull Channel channel,

            @NotBlank @Pattern(regexp = TRADE_NO, message = "must be 1 to 64 letters, digits, '_' or '-'")
            String outTradeNo,

            @NotNull @DecimalMin(value = "0.01", message = "must be greater than 0") @Digits(integer = 15, fraction = 2)
            BigDecimal amount) {}

    record SettleRequest(
            @NotNull Channel channel,

            @NotBlank @Pattern(regexp = TRADE_NO, message = "must be 1 to 64 letters, digits, '_' or '-'")
            String outTradeNo) {}

    record BatchSettleRequest(
            @NotEmpty @Size(max = 50) List<@NotBlank @Size(max = 40) String> borrowNos,
            @NotNull Channel channel,

            @NotBlank @Pattern(regexp = TRADE_NO, message = "must be 1 to 64 letters, digits, '_' or '-'")
            String outTradeNo) {}

    record ExtendRequest(@Min(1) @Max(120) int extraMonths) {}

    record ReverseRequest(@NotBlank @Size(max = 200) String reason) {}

    record WaiveRequest(
            @NotNull @DecimalMin(value = "0.01", message = "must be greater than 0") @Digits(integer = 15, fraction = 2)
            BigDecimal amount,

            @NotBlank @Size(max = 120) String reason) {}

    record WriteOffRequest(@NotBlank @Size(max = 120) String reason) {}

    private final LoanService loans;
    private final OverdueJob overdue;
    private final BusinessCalendar calendar;

    LoanController(LoanService loans, OverdueJob overdue, BusinessCalendar calendar) {
        this.loans = loans;
        this.overdue = overdue;
        this.calendar = calendar;
    }

    @GetMapping("/notes")
    List<Note> notes(@PathVariable String tenant) {
        return loans.notes(tenant);
    }

    @GetMapping("/notes/{borrowNo}")
    NoteView note(@PathVariable String tenant, @PathVariable String borrowNo) {
        return loans.view(tenant, borrowNo);
    }

    @GetMapping("/notes/{borrowNo}/repayments")
    List<Receipt> repayments(@PathVariable String tenant, @PathVariable String borrowNo) {
        return loans.flows(tenant, borrowNo);
    }

    @GetMapping("/notes/{borrowNo}/conservation")
    Conservation conservation(@PathVariable String tenant, @PathVariable String borrowNo) {
        return loans.conservation(tenant, borrowNo);
    }

    /** A repayment; the same trade number and amount again gets 200 with the original receipt. */
    @PostMapping("/notes/{borrowNo}/repayments")
    ResponseEntity<Receipt> repay(
            @PathVariable String tenant, @PathVariable String borrowNo, @Valid @RequestBody RepayRequest request) {
        loans.requireExists(tenant, borrowNo);
        LoanService.Repayment result;
        try {
            result = loans.repay(tenant, borrowNo, request.channel(), request.outTradeNo(), request.amount());
        } catch (DuplicateKeyException raced) {
            result = loans.duplicateOf(
                    tenant, borrowNo, request.channel(), request.outTradeNo(), "REPAYMENT", Money.of(request.amount()));
        }
        return answer(result);
    }

    @PostMapping("/notes/{borrowNo}/settlement")
    ResponseEntity<Receipt> settle(
            @PathVariable String tenant, @PathVariable String borrowNo, @Valid @RequestBody SettleRequest request) {
        loans.requireExists(tenant, borrowNo);
        LoanService.Repayment result;
        try {
            result = loans.settle(tenant, borrowNo, request.channel(), request.outTradeNo());
        } catch (DuplicateKeyException raced) {
            result = loans.duplicateOf(tenant, borrowNo, request.channel(), request.outTradeNo(), "SETTLEMENT", null);
        }
        return answer(result);
    }

    @PostMapping("/customers/{customerId}/batch-settlement")
    ResponseEntity<List<Receipt>> settleAll(
            @PathVariable String tenant,
            @PathVariable String customerId,
            @Valid @RequestBody BatchSettleRequest request) {
        for (String borrowNo : request.borrowNos()) {
            loans.requireExists(tenant, borrowNo);
        }
        List<LoanService.Repayment> results;
        try {
            results = loans.settleAll(tenant, customerId, request.borrowNos(), request.channel(), request.outTradeNo());
        } catch (DuplicateKeyException raced) {
            results = request.borrowNos().stream()
                    .distinct()
                    .sorted()
                    .map(n -> loans.duplicateOf(tenant, n, request.channel(), request.outTradeNo(), "SETTLEMENT", null))
                    .toList();
        }
        ResponseEntity.BodyBuilder ok = ResponseEntity.ok();
        if (results.stream().allMatch(LoanService.Repayment::duplicate)) {
            ok.header(DUPLICATE_HEADER, "true");
        }
        return ok.body(results.stream().map(LoanService.Repayment::receipt).toList());
    }

    @PostMapping("/notes/{borrowNo}/extension")
    NoteView extend(
            @PathVariable String tenant,
            @PathVariable String borrowNo,
            @RequestHeader("Idempotency-Key") String key,
            @Valid @RequestBody ExtendRequest request) {
        loans.requireExists(tenant, borrowNo);
        LoanService.Command command = command(key, "extension", borrowNo, request.extraMonths());
        try {
            return loans.extend(tenant, borrowNo, request.extraMonths(), command);
        } catch (DuplicateKeyException raced) {
            return loans.replayOf(tenant, key, command.name(), command.fingerprint(), NoteView.class);
        }
    }

    @PostMapping("/notes/{borrowNo}/repayments/{flowId}/reversal")
    LoanService.Reversal reverse(
            @PathVariable String tenant,
            @PathVariable String borrowNo,
            @PathVariable String flowId,
            @RequestHeader("Idempotency-Key") String key,
            @Valid @RequestBody ReverseRequest request) {
        loans.requireExists(tenant, borrowNo);
        LoanService.Command command = command(key, "reversal", borrowNo, flowId, request.reason());
        try {
            return loans.reverse(tenant, borrowNo, flowId, request.reason(), command);
        } catch (DuplicateKeyException raced) {
            return loans.replayOf(tenant, key, command.name(), command.fingerprint(), LoanService.Reversal.class);
        }
    }

    /** An interest waiver; the operator is the calling principal, never a field of the body. */
    @PostMapping("/notes/{borrowNo}/interest-waivers")
    NoteView waive(
            @PathVariable String tenant,
            @PathVariable String borrowNo,
            @RequestHeader("Idempotency-Key") String key,
            @Valid @RequestBody WaiveRequest request,
            Authentication caller) {
        loans.requireExists(tenant, borrowNo);
        LoanService.Command command = command(key, "waiver", borrowNo, Money.of(request.amount()), request.reason());
        try {
            return loans.waive(tenant, borrowNo, request.amount(), caller.getName(), request.reason(), command);
        } catch (DuplicateKeyException raced) {
            return loans.replayOf(tenant, key, command.name(), command.fingerprint(), NoteView.class);
        }
    }

    @PostMapping("/notes/{borrowNo}/write-off")
    NoteView writeOff(
            @PathVariable String tenant,
            @PathVariable String borrowNo,
            @RequestHeader("Idempotency-Key") String key,
            @Valid @RequestBody WriteOffRequest request,
            Authentication caller) {
        loans.requireExists(tenant, borrowNo);
        LoanService.Command command = command(key, "write-off", borrowNo, request.reason());
        try {
            return loans.writeOff(tenant, borrowNo, caller.getName(), request.reason(), command);
        } catch (DuplicateKeyException raced) {
            return loans.replayOf(tenant, key, command.name(), command.fingerprint(), NoteView.class);
        }
    }

    /** Runs the overdue job now for one business date (by default today); never for a later date. */
    @PostMapping("/overdue-runs")
    OverdueJob.Run runOverdue(@PathVariable String tenant, @RequestParam(required = false) LocalDate asOf) {
        LocalDate today = calendar.today();
        if (asOf != null && asOf.isAfter(today)) {
            throw new LoanProblems.Refused(
                    422,
                    "as-of-in-the-future",
                    "asOf: " + asOf + " is after the business date " + today + "; penalties are never charged ahead");
        }
        return overdue.run(tenant, asOf);
    }

    private static LoanService.Command command(String key, String name, Object... parameters) {
        if (!key.matches(KEY)) {
            throw new LoanProblems.Refused(
                    400, "invalid-request", "Idempotency-Key: must be 1 to 100 letters, digits, '_', '-', ':' or '.'");
        }
        StringBuilder canonical = new StringBuilder(name);
        for (Object p : parameters) {
            canonical.append('\u001f').append(p);
        }
        try {
            byte[] hash = MessageDigest.getInstance("SHA-256")
                    .digest(canonical.toString().getBytes(StandardCharsets.UTF_8));
            return new LoanService.Command(key, name, HexFormat.of().formatHex(hash));
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException(e);
        }
    }

    private static ResponseEntity<Receipt> answer(LoanService.Repayment result) {
        ResponseEntity.BodyBuilder ok = ResponseEntity.ok();
        if (result.duplicate()) {
            ok.header(DUPLICATE_HEADER, "true");
        }
        return ok.body(result.receipt());
    }
}
