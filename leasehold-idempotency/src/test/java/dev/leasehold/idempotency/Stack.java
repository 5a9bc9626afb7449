package dev.leasehold.idempotency;

import com.zaxxer.hikari.HikariDataSource;
import dev.leasehold.LockService;
import dev.leasehold.jdbc.Database;
import dev.leasehold.jdbc.JdbcLeaseStore;
import dev.leasehold.testkit.TestServices;
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import javax.sql.DataSource;

/** The records, side effects, lock service and executor of one test, over a pooled real database. */
record Stack(RequestRecords records, SideEffects effects, LockService locks, IdempotentExecutor executor)
        implements AutoCloseable {

    private static final Map<String, HikariDataSource> POOLS = new ConcurrentHashMap<>();

    /** One pool per database URL, with the schema created. */
    static DataSource pooled(TestServices.JdbcEndpoint endpoint, Database database) {
        return POOLS.computeIfAbsent(
                endpoint.url(),
                url -> AbstractIdempotencyTest.pool(url, endpoint.user(), endpoint.password(), database));
    }

    static void closePools() {
        POOLS.values().forEach(HikariDataSource::close);
        POOLS.clear();
    }

    static Stack open(DataSource dataSource, Database database, Duration staleAfter) {
        return open(RequestRecords.builder(dataSource).database(database).staleAfter(staleAfter), dataSource, database);
    }

    /** A stack whose records are built by {@code records} (for example with a longer heartbeat lock wait). */
    static Stack open(RequestRecords.Builder recordsBuilder, DataSource dataSource, Database database) {
        RequestRecords records = recordsBuilder.build();
        Duration staleAfter = records.staleAfter();
        SideEffects effects = SideEffects.builder(dataSource)
                .database(database)
                .staleAfter(staleAfter)
                .build();
        LockService locks = LockService.builder(
                        JdbcLeaseStore.builder(dataSource).database(database).build())
                .build();
        return new Stack(records, effects, locks, new IdempotentExecutor(records, locks));
    }

    @Override
    public void close() {
        executor.close();
        locks.close();
    }
}
