package dev.leasehold.spring.schema;

import static org.assertj.core.api.Assertions.assertThat;

import dev.leasehold.LockKey;
import dev.leasehold.jdbc.Database;
import dev.leasehold.jdbc.JdbcLeaseStore;
import dev.leasehold.spi.AcquireResult;
import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Arrays;
import java.util.List;
import org.flywaydb.core.Flyway;
import org.h2.jdbcx.JdbcDataSource;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * An upgrade: a schema migrated by an earlier release, whose history holds each module's first
 * scripts only (1, 2, 3), takes the later scripts of every module (1.1, 1.2, 2.1) although they
 * sort below versions already applied. Each module numbers its own scripts ({@link
 * LeaseholdMigrations}), so a module's new script is always "out of order" for the history.
 */
class LeaseholdFlywayUpgradeTest {

    private static final String HISTORY = "leasehold_schema_history";

    @Test
    void aSchemaOfAnEarlierReleaseTakesEveryModulesLaterScripts(@TempDir Path earlier) throws IOException {
        for (String script :
                List.of("V1__leasehold_tables.sql", "V2__leasehold_idempotency.sql", "V3__leasehold_retry.sql")) {
            try (InputStream in = getClass().getClassLoader().getResourceAsStream("db/leasehold/h2/" + script)) {
                assertThat(in).as(script).isNotNull();
                Files.copy(in, earlier.resolve(script));
            }
        }
        JdbcDataSource dataSource = new JdbcDataSource();
        dataSource.setURL("jdbc:h2:mem:leasehold-upgrade;DB_CLOSE_DELAY=-1");
        Flyway.configure()
                .dataSource(dataSource)
                .table(HISTORY)
                .locations("filesystem:" + earlier)
                .baselineOnMigrate(true)
                .baselineVersion("0")
                .load()
                .migrate();

        LeaseholdFlywayMigration migration = new LeaseholdFlywayMigration(dataSource, Database.H2, HISTORY);
        migration.afterPropertiesSet();

        assertThat(Arrays.stream(migration.flyway().info().applied())
                        .filter(info ->
                                info.getState().isApplied() && !info.getState().isFailed())
                        .filter(info -> info.getVersion() != null
                                && !info.getVersion().getVersion().equals("0"))
                        .map(info -> info.getVersion().getVersion()))
                .as("the history after the upgrade, in the order applied")
                .startsWith("1", "2", "3")
                .contains("1.1", "1.2", "2.1");
        try (JdbcLeaseStore store = JdbcLeaseStore.builder(dataSource).build()) {
            assertThat(store.tryAcquire(LockKey.of("upgrade", "1"), "owner-after-upgrade", Duration.ofSeconds(5)))
                    .isInstanceOf(AcquireResult.Granted.class);
        }
    }
}
