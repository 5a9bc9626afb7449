package dev.leasehold.spring.schema;

import java.util.function.Consumer;

/** Fresh databases for tests outside this package. */
public final class TestDatabaseAccess {

    private TestDatabaseAccess() {}

    /** Runs {@code test} with the Spring datasource properties of a fresh PostgreSQL database, then drops it. */
    public static void onFreshPostgres(Consumer<String[]> test) {
        try (TestDatabases postgres = TestDatabases.postgres()) {
            test.accept(new String[] {
                "spring.datasource.url=" + postgres.url(),
                "spring.datasource.username=" + postgres.user(),
                "spring.datasource.password=" + postgres.password()
            });
        }
    }
}
