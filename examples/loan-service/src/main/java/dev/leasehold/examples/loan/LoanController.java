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
import java.time.LocalDate;
import java.util.List;
import org.springframework.dao.DuplicateKeyException;
import org.springframework.http.ResponseEntity;
import org.springframework.web.bind.annotation.GetMapping;
import org.springframework.web.bind.annotation.PathVariable;
import org.springframework.web.bind.annotation.PostMapping;
import org.springframework.web.bind.annotation.RequestBody;
import org.springframework.web.bind.annotation.RequestMapping;
import org.springframework.web.bind.annotation.RequestParam;
import org.springframework.web.bind.annotation.RestController;

/** The credit core's REST API. Tenants are part of the path; another tenant's note is a 404. */
@RestController
@RequestMapping("/api/tenants/{tenant}")
class LoanController {

    static final String TRADE_NO = "[A-Za-z0-9_\\-]{1,64}";

    record RepayRequest(
            @NotNull Channel channel,

            @NotBlank @Pattern(regexp = TRADE_NO, message = "must be 1 to 64 letters, digits, '_' or '-'")
            String outTradeNo,

            @NotNull @DecimalMin(value = "0.01", message = "must be greater than 0") @Digits(integer = 17, fraction = 2)
            BigDecimal amount) {}

    record SettleRequest(
            @NotNull Channel channel,

            @NotBlank @Pattern(regexp = TRADE_NO, message = "must be 1 to 64 letters, digits, '_' or '-'")
            String outTradeNo) {}

    record BatchSettleRequest(
            @NotEmpty @Size(max = 50) List<@NotBlank String> borrowNos,
            @NotNull Channel channel,

            @NotBlank @Pattern(regexp = TRADE_NO, message = "must be 1 to 64 letters, digits, '_' or '-'")
            String outTradeNo) {}

    record ExtendRequest(@Min(1) @Max(120) int extraMonths) {}

    record ReverseRequest(@NotBlank @Size(max = 200) String reason) {}

    record WaiveRequest(
            @NotNull @DecimalMin(value = "0.01", message = "must be greater than 0") @Digits(integer = 17, fraction = 2)
            BigDecimal amount,

            @NotBlank @Size(max = 64) String operator,
            @NotBlank @Size(max = 120) String reason) {}

    private final LoanService loans;
    private final OverdueJob overdue;

    LoanController(LoanService loans, OverdueJob overdue) {
        this.loans = loans;
        this.overdue = overdue;
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

    /** A repayment; the same trade number again gets 200 with the original receipt. */
    @PostMapping("/notes/{borrowNo}/repayments")
    ResponseEntity<Receipt> repay(
            @PathVariable String tenant, @PathVariable String borrowNo, @Valid @RequestBody RepayRequest request) {
        LoanService.Repayment result;
        try {
            result = loans.repay(tenant, borrowNo, request.channel(), request.outTradeNo(), request.amount());
        } catch (DuplicateKeyException raced) {
            result = loans.duplicateOf(tenant, borrowNo, request.channel(), request.outTradeNo());
        }
        return answer(result);
    }

    @PostMapping("/notes/{borrowNo}/settlement")
    ResponseEntity<Receipt> settle(
            @PathVariable String tenant, @PathVariable String borrowNo, @Valid @RequestBody SettleRequest request) {
        LoanService.Repayment result;
        try {
            result = loans.settle(tenant, borrowNo, request.channel(), request.outTradeNo());
        } catch (DuplicateKeyException raced) {
            result = loans.duplicateOf(tenant, borrowNo, request.channel(), request.outTradeNo());
        }
        return answer(result);
    }

    @PostMapping("/customers/{customerId}/batch-settlement")
    List<Receipt> settleAll(
            @PathVariable String tenant,
            @PathVariable String customerId,
            @Valid @RequestBody BatchSettleRequest request) {
        return loans
                .settleAll(tenant, customerId, request.borrowNos(), request.channel(), request.outTradeNo())
                .stream()
                .map(LoanService.Repayment::receipt)
                .toList();
    }

    @PostMapping("/notes/{borrowNo}/extension")
    NoteView extend(
            @PathVariable String tenant, @PathVariable String borrowNo, @Valid @RequestBody ExtendRequest request) {
        return loans.extend(tenant, borrowNo, request.extraMonths());
    }

    @PostMapping("/notes/{borrowNo}/repayments/{flowId}/reversal")
    Note reverse(
            @PathVariable String tenant,
            @PathVariable String borrowNo,
            @PathVariable String flowId,
            @Valid @RequestBody ReverseRequest request) {
        return loans.reverse(tenant, borrowNo, flowId, request.reason());
    }

    @PostMapping("/notes/{borrowNo}/interest-waivers")
    Note waive(@PathVariable String tenant, @PathVariable String borrowNo, @Valid @RequestBody WaiveRequest request) {
        return loans.waive(tenant, borrowNo, request.amount(), request.operator(), request.reason());
    }

    /** Runs the overdue job now for one business date (by default the database's today). */
    @PostMapping("/overdue-runs")
    OverdueJob.Run runOverdue(@PathVariable String tenant, @RequestParam(required = false) LocalDate asOf) {
        return overdue.run(tenant, asOf);
    }

    private static ResponseEntity<Receipt> answer(LoanService.Repayment result) {
        ResponseEntity.BodyBuilder ok = ResponseEntity.ok();
        if (result.duplicate()) {
            ok.header("Repayment-Duplicate", "true");
        }
        return ok.body(result.receipt());
    }
}
