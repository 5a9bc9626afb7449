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

    /** Text cut to {@code max} characters, for a column of that size. */
    static String clip(String text, int max) {
        return text.length() <= max ? text : text.substring(0, max);
    }
}
