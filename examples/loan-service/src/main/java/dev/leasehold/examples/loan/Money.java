package dev.leasehold.examples.loan;

import java.math.BigDecimal;
import java.math.RoundingMode;

/** Money is BigDecimal with two decimals, rounded half-even; never a double. */
final class Money {

    static final BigDecimal ZERO = BigDecimal.ZERO.setScale(2);

    private Money() {}

    static BigDecimal of(BigDecimal value) {
        return value.setScale(2, RoundingMode.HALF_EVEN);
    }

    static BigDecimal of(String value) {
        return of(new BigDecimal(value));
    }
}
