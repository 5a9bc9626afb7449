package dev.leasehold.it.shop;

import java.net.URI;
import org.springframework.http.HttpStatus;
import org.springframework.http.ProblemDetail;
import org.springframework.web.bind.annotation.ExceptionHandler;
import org.springframework.web.bind.annotation.RestControllerAdvice;

/** The application's own problem responses. */
@RestControllerAdvice
public class ShopProblems {

    @ExceptionHandler(Refunds.RefundRejectedException.class)
    ProblemDetail refundRejected(Refunds.RefundRejectedException e) {
        ProblemDetail problem = ProblemDetail.forStatusAndDetail(HttpStatus.UNPROCESSABLE_CONTENT, e.getMessage());
        problem.setType(URI.create("https://shop.example/problems/refund-rejected"));
        return problem;
    }

    @ExceptionHandler(Transfers.TransferFailedException.class)
    ProblemDetail transferFailed(Transfers.TransferFailedException e) {
        ProblemDetail problem = ProblemDetail.forStatusAndDetail(HttpStatus.CONFLICT, e.getMessage());
        problem.setType(URI.create("https://shop.example/problems/transfer-failed"));
        return problem;
    }
}
