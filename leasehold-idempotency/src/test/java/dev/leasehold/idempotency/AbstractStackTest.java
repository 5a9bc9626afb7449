package dev.leasehold.idempotency;

import dev.leasehold.LockService;
import dev.leasehold.jdbc.Database;
import dev.leasehold.testkit.TestServices;
import java.time.Duration;
import java.util.UUID;
import javax.sql.DataSource;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;

/**
 * One real database and, for each test, a scope of its own and a fresh {@link Stack} over it.
 * Subclasses say how to reach the database.
 */
abstract class AbstractStackTest {

    private final String scopePrefix;
    private final Duration staleAfter;
    protected Stack stack;
    protected String scope;
    protected RequestRecords records;
    protected SideEffects effects;
    protected LockService locks;
    protected IdempotentExecutor executor;

    AbstractStackTest(String scopePrefix, Duration staleAfter) {
        this.scopePrefix = scopePrefix;
        this.staleAfter = staleAfter;
    }

    /** Where the database answers (resolved on first use, so a missing server skips each test). */
    protected abstract TestServices.JdbcEndpoint endpoint();

    protected abstract Database database();

    protected DataSource dataSource() {
        return Stack.pooled(endpoint(), database());
    }

    @AfterAll
    static void closePools() {
        Stack.closePools();
    }

    @BeforeEach
    void open() {
        scope = scopePrefix + UUID.randomUUID();
        stack = Stack.open(dataSource(), database(), staleAfter);
        records = stack.records();
        effects = stack.effects();
        locks = stack.locks();
        executor = stack.executor();
    }

    @AfterEach
    void close() {
        if (stack != null) {
            stack.close();
        }
    }
}
