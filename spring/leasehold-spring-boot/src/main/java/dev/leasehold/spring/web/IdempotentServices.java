package dev.leasehold.spring.web;

import dev.leasehold.idempotency.IdempotentExecutor;
import dev.leasehold.spring.LeaseholdProperties;
import dev.leasehold.spring.internal.LeaseholdJson;
import java.util.function.Supplier;
import javax.sql.DataSource;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.beans.factory.ListableBeanFactory;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.jdbc.datasource.DataSourceTransactionManager;
import org.springframework.transaction.PlatformTransactionManager;

/**
 * Finds, once, what {@link IdempotentInterceptor} needs: the executor, the application's JSON mapper,
 * and the transaction manager of the records' DataSource ({@code
 * leasehold.idempotency.transaction-manager}, else the application's only or primary one, else a
 * DataSourceTransactionManager of its own on that DataSource).
 */
final class IdempotentServices implements Supplier<IdempotentInterceptor.Services> {

    private static final Logger log = LoggerFactory.getLogger(IdempotentServices.class);

    private final ObjectProvider<IdempotentExecutor> executor;
    private final ObjectProvider<LeaseholdProperties> properties;
    private final ObjectProvider<DataSource> dataSource;
    private final ListableBeanFactory beans;
    private volatile IdempotentInterceptor.Services resolved;

    IdempotentServices(
            ObjectProvider<IdempotentExecutor> executor,
            ObjectProvider<LeaseholdProperties> properties,
            ObjectProvider<DataSource> dataSource,
            ListableBeanFactory beans) {
        this.executor = executor;
        this.properties = properties;
        this.dataSource = dataSource;
        this.beans = beans;
    }

    @Override
    public IdempotentInterceptor.Services get() {
        IdempotentInterceptor.Services current = resolved;
        if (current == null) {
            synchronized (this) {
                current = resolved;
                if (current == null) {
                    current = resolve();
                    resolved = current;
                }
            }
        }
        return current;
    }

    private IdempotentInterceptor.Services resolve() {
        DataSource ds = dataSource.getObject();
        String name = properties.getObject().getIdempotency().getTransactionManager();
        PlatformTransactionManager transactions;
        if (name != null && !name.isBlank()) {
            transactions = beans.getBean(name, PlatformTransactionManager.class);
        } else {
            transactions = beans.getBeanProvider(PlatformTransactionManager.class)
                    .getIfUnique(() -> new DataSourceTransactionManager(ds));
        }
        LeaseholdJson json = LeaseholdJson.of(beans);
        log.info(
                "@Idempotent runs in transactions of {} and stores answers with {}",
                transactions.getClass().getSimpleName(),
                json.describe());
        return new IdempotentInterceptor.Services(executor.getObject(), json, transactions, ds);
    }
}
