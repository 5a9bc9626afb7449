package dev.leasehold.jdbc;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Proxy;
import java.sql.Connection;
import java.sql.DatabaseMetaData;
import java.util.UUID;
import org.h2.jdbcx.JdbcDataSource;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * The SQL store refuses H2 2.x before 2.5 (h2database issue 4352 fails its statements under
 * concurrent use, {@code H2LeaseStoreTest#statementsNeverFailWhileOtherSessionsEndTheirTransactions}
 * on 2.4.240), naming the version and the fix, and accepts the H2 of this build.
 */
class H2VersionsTest {

    @ParameterizedTest
    @ValueSource(strings = {"2.4.240 (2025-09-22)", "2.4.240", "2.1.214 (2022-06-13)", "2.3.232 (2024-08-11)"})
    void versionsBefore25AreRefusedNamingTheVersionAndTheFix(String productVersion) {
        String version = productVersion.split(" ")[0];
        assertThat(H2Versions.refusal(productVersion))
                .startsWith("H2 " + version + " fails the SQL lease store's statements under concurrent use")
                .contains("h2database issue 4352")
                .contains("Use H2 2.5.252")
                .contains("<h2.version>2.5.252</h2.version>")
                .contains("leasehold-bom");
    }

    @ParameterizedTest
    @ValueSource(strings = {"2.5.252 (2025-11-09)", "2.5.300", "2.10.1", "3.0.0 (2030-01-01)", "unknown", ""})
    void versionsFrom25OnAndUnreadableOnesAreAccepted(String productVersion) {
        assertThat(H2Versions.refusal(productVersion)).isNull();
    }

    @Test
    void theH2OfThisBuildIsAcceptedWhenTheStoreIsBuilt() throws Exception {
        JdbcDataSource h2 = memory();
        try (Connection connection = h2.getConnection()) {
            assertThat(connection.getMetaData().getDatabaseProductVersion()).startsWith(H2Versions.TESTED);
        }
        try (JdbcLeaseStore store = JdbcLeaseStore.builder(h2).build()) {
            assertThat(store.name()).isEqualTo("h2");
        }
    }

    @Test
    void aStoreOnH2ReportingVersion24IsRefusedAtBuildWhetherDetectedOrNamed() {
        WrappingDataSource reports240 = new WrappingDataSource(memory(), H2VersionsTest::reporting240);
        assertThatThrownBy(() -> JdbcLeaseStore.builder(reports240).build())
                .isInstanceOf(IllegalStateException.class)
                .hasMessageStartingWith("H2 2.4.240 fails")
                .hasMessageContaining("<h2.version>2.5.252</h2.version>");
        assertThatThrownBy(() ->
                        JdbcLeaseStore.builder(reports240).database(Database.H2).build())
                .isInstanceOf(IllegalStateException.class)
                .hasMessageStartingWith("H2 2.4.240 fails");
    }

    private static JdbcDataSource memory() {
        JdbcDataSource h2 = new JdbcDataSource();
        h2.setURL("jdbc:h2:mem:h2-version-" + UUID.randomUUID() + ";DB_CLOSE_DELAY=-1");
        h2.setUser("sa");
        return h2;
    }

    /** The real connection, whose metadata says it is H2 2.4.240. */
    private static Connection reporting240(Connection real) {
        return (Connection) Proxy.newProxyInstance(
                H2VersionsTest.class.getClassLoader(), new Class<?>[] {Connection.class}, (proxy, method, args) -> {
                    try {
                        Object answer = method.invoke(real, args);
                        if (method.getName().equals("getMetaData")) {
                            DatabaseMetaData metaData = (DatabaseMetaData) answer;
                            return Proxy.newProxyInstance(
                                    H2VersionsTest.class.getClassLoader(),
                                    new Class<?>[] {DatabaseMetaData.class},
                                    (p, m, a) -> m.getName().equals("getDatabaseProductVersion")
                                            ? "2.4.240 (2025-09-22)"
                                            : m.invoke(metaData, a));
                        }
                        return answer;
                    } catch (InvocationTargetException e) {
                        throw e.getCause();
                    }
                });
    }
}
