package dev.leasehold.spring;

import dev.leasehold.idempotency.IdempotentExecutor;
import javax.sql.DataSource;
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
        return Records.ledger(context);
    }

    /** Loaded only when the idempotency module is present. */
    private static final class Records {
        static RetryLedger ledger(ApplicationContext context) {
            // The same executor, JSON mapper and transaction manager as @Idempotent, found once on
            // first use: the records bean may be created after the retries.
            IdempotentServices services = new IdempotentServices(
                    context.getBeanProvider(IdempotentExecutor.class),
                    context.getBeanProvider(LeaseholdProperties.class),
                    context.getBeanProvider(DataSource.class),
                    context);
            return key -> {
                if (context.getBeanProvider(IdempotentExecutor.class).getIfAvailable() == null) {
                    return RetryLedger.NONE.begin(key);
                }
                IdempotentInterceptor.Services s = services.get();
                return new RequestRecordLedger(s.executor(), s.transactions(), s.dataSource()).begin(key);
            };
        }
    }
}
