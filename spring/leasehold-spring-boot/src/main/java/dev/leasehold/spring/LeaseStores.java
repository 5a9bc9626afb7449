package dev.leasehold.spring;

import dev.leasehold.jdbc.JdbcLeaseStore;
import dev.leasehold.memory.InMemoryLeaseStore;
import dev.leasehold.spi.LeaseStore;
import javax.sql.DataSource;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.context.ApplicationContext;
import org.springframework.util.ClassUtils;

/** Builds the lease store {@code leasehold.backend} asks for, touching optional modules only when chosen. */
final class LeaseStores {

    private static final Logger log = LoggerFactory.getLogger(LeaseStores.class);
    static final boolean JDBC_PRESENT = ClassUtils.isPresent("dev.leasehold.jdbc.JdbcLeaseStore", null);
    static final boolean REDIS_PRESENT = ClassUtils.isPresent("dev.leasehold.redis.RedisLeaseStore", null)
            && ClassUtils.isPresent("io.lettuce.core.RedisClient", null);
    static final boolean ETCD_PRESENT = ClassUtils.isPresent("dev.leasehold.etcd.EtcdLeaseStore", null)
            && ClassUtils.isPresent("io.etcd.jetcd.Client", null);

    private LeaseStores() {}

    static LeaseholdProperties.Backend resolve(
            LeaseholdProperties properties, DataSource dataSource, ApplicationContext context) {
        LeaseholdProperties.Backend backend = properties.getBackend();
        if (backend != LeaseholdProperties.Backend.AUTO) {
            return backend;
        }
        if (dataSource != null && JDBC_PRESENT) {
            return LeaseholdProperties.Backend.JDBC;
        }
        if (REDIS_PRESENT && RedisStores.available(properties, context)) {
            return LeaseholdProperties.Backend.REDIS;
        }
        // In-memory leases exclude callers of one JVM only: never a silent fallback.
        throw new IllegalStateException("leasehold.backend=auto found no lease store: there is no DataSource"
                + (JDBC_PRESENT ? "" : " (and no leasehold-jdbc)") + " and no Redis (no leasehold.redis.url, Lettuce"
                + " client or Spring Data Redis connection factory). Configure one, or set leasehold.backend=memory"
                + " for a single JVM (tests, tools)");
    }

    static LeaseStore create(LeaseholdProperties properties, DataSource dataSource, ApplicationContext context) {
        LeaseholdProperties.Backend backend = resolve(properties, dataSource, context);
        switch (backend) {
            case JDBC -> {
                if (!JDBC_PRESENT) {
                    throw new IllegalStateException(
                            "leasehold.backend=jdbc needs dev.leasehold:leasehold-jdbc on the class path");
                }
                if (dataSource == null) {
                    throw new IllegalStateException(
                            "leasehold.backend=jdbc needs a DataSource bean; none is configured");
                }
                log.info("Leasehold leases in the SQL database");
                return JdbcLeaseStore.builder(dataSource).build();
            }
            case REDIS -> {
                if (!REDIS_PRESENT) {
                    throw new IllegalStateException(
                            "leasehold.backend=redis needs dev.leasehold:leasehold-redis and Lettuce on the class path");
                }
                log.info("Leasehold leases in Redis");
                return RedisStores.create(properties, context);
            }
            case ETCD -> {
                if (!ETCD_PRESENT) {
                    throw new IllegalStateException(
                            "leasehold.backend=etcd needs dev.leasehold:leasehold-etcd (with jetcd) on the class path");
                }
                log.info("Leasehold leases in etcd");
                return EtcdStores.create(properties, context, "leaseholdLeaseStore");
            }
            default -> {
                log.warn(
                        "Leasehold leases in memory (leasehold.backend=memory): they exclude callers in this JVM only");
                return new InMemoryLeaseStore();
            }
        }
    }
}
