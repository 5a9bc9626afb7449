package dev.leasehold.spring;

import dev.leasehold.idempotency.IdempotencySchema;
import dev.leasehold.jdbc.Database;
import dev.leasehold.jdbc.JdbcSchema;
import java.sql.SQLException;
import javax.sql.DataSource;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.util.ClassUtils;

/**
 * Creates Leasehold's tables at startup when {@code leasehold.jdbc.initialize-schema} says so
 * (by default only on an embedded H2 database). With Flyway, add {@code
 * classpath:db/leasehold/{vendor}} to {@code spring.flyway.locations} instead and set it to never.
 */
public final class LeaseholdSchema {

    private static final Logger log = LoggerFactory.getLogger(LeaseholdSchema.class);

    LeaseholdSchema(DataSource dataSource, LeaseholdProperties.SchemaInitialization mode) throws SQLException {
        if (mode == LeaseholdProperties.SchemaInitialization.NEVER) {
            return;
        }
        Database database = Database.detect(dataSource);
        if (mode == LeaseholdProperties.SchemaInitialization.EMBEDDED && database != Database.H2) {
            return;
        }
        if (ClassUtils.isPresent("dev.leasehold.idempotency.IdempotencySchema", null)) {
            IdempotencySchema.create(dataSource, database);
        } else {
            JdbcSchema.create(dataSource, database);
        }
        JdbcSchema.runScript(dataSource, "/" + database.migrationLocation() + "/V3__leasehold_retry.sql");
        log.info("Leasehold tables ready on {}", database.id());
    }
}
