package dev.leasehold.spring.schema;

import java.util.Set;
import org.springframework.boot.sql.init.dependency.AbstractBeansOfTypeDatabaseInitializerDetector;

/**
 * Tells Spring Boot that {@link LeaseholdFlywayMigration} initializes the database: ordered after
 * the application's Flyway migration (its detector has order 1) and before every bean that depends
 * on database initialization. ({@link LeaseholdScriptInitializer} is found by Boot's own detector.)
 */
public class LeaseholdSchemaInitializerDetector extends AbstractBeansOfTypeDatabaseInitializerDetector {

    /** After Spring Boot's {@code FlywayMigrationInitializer} detector. */
    static final int ORDER = 2;

    @Override
    protected Set<Class<?>> getDatabaseInitializerBeanTypes() {
        return Set.of(LeaseholdFlywayMigration.class);
    }

    @Override
    public int getOrder() {
        return ORDER;
    }
}
