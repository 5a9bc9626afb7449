package dev.leasehold.spring.retry;

import dev.leasehold.spring.web.RequestRecordLedger;
import org.springframework.context.ApplicationContext;
import org.springframework.util.ClassUtils;

/**
 * Picks the {@link RetryLedger}: request records, claimed through the idempotency executor in the
 * records' transactions, when the idempotency module and its beans are there.
 */
final class RetryLedgers {

    private static final boolean RECORDS =
            ClassUtils.isPresent("dev.leasehold.idempotency.IdempotentExecutor", RetryLedgers.class.getClassLoader())
                    && ClassUtils.isPresent(
                            "org.springframework.jdbc.datasource.DataSourceUtils", RetryLedgers.class.getClassLoader());

    private RetryLedgers() {}

    static RetryLedger of(ApplicationContext context) {
        if (!RECORDS) {
            return RetryLedger.NONE;
        }
        // Loaded only when the idempotency module is present.
        return RequestRecordLedger.forRetries(context);
    }
}
