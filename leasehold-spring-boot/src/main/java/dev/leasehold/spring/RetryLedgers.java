package dev.leasehold.spring;

import dev.leasehold.idempotency.RequestRecords;
import org.springframework.context.ApplicationContext;
import org.springframework.util.ClassUtils;

/** Picks the {@link RetryLedger}: request records when the idempotency module and its bean are there. */
final class RetryLedgers {

    private static final boolean RECORDS =
            ClassUtils.isPresent("dev.leasehold.idempotency.RequestRecords", RetryLedgers.class.getClassLoader());

    private RetryLedgers() {}

    static RetryLedger of(ApplicationContext context) {
        if (!RECORDS) {
            return RetryLedger.NONE;
        }
        return Records.ledger(context);
    }

    /** Loaded only when the idempotency module is present. */
    private static final class Records {
        static RetryLedger ledger(ApplicationContext context) {
            // Looked up on each delivery: the records bean may be created after the retries.
            return key -> {
                RequestRecords records =
                        context.getBeanProvider(RequestRecords.class).getIfAvailable();
                return records == null ? RetryLedger.NONE.begin(key) : new RequestRecordLedger(records).begin(key);
            };
        }
    }
}
