package dev.leasehold.spring;

import dev.leasehold.redis.RedisLeaseStore;
import dev.leasehold.spi.LeaseStore;
import io.lettuce.core.AbstractRedisClient;
import io.lettuce.core.RedisClient;
import io.lettuce.core.RedisURI;
import io.lettuce.core.cluster.RedisClusterClient;
import org.springframework.context.ApplicationContext;
import org.springframework.util.ClassUtils;

/**
 * The Redis store from the application's Lettuce client: a {@link RedisClient} or {@link
 * RedisClusterClient} bean, else the native client of Spring Data Redis's Lettuce connection
 * factory, else one created from {@code leasehold.redis.url} (and shut down with the store).
 */
final class RedisStores {

    private static final boolean SPRING_DATA_REDIS =
            ClassUtils.isPresent("org.springframework.data.redis.connection.lettuce.LettuceConnectionFactory", null);

    private RedisStores() {}

    static boolean available(LeaseholdProperties properties, ApplicationContext context) {
        return properties.getRedis().getUrl() != null || client(context) != null;
    }

    private static AbstractRedisClient client(ApplicationContext context) {
        AbstractRedisClient client =
                context.getBeanProvider(AbstractRedisClient.class).getIfAvailable();
        if (client == null && SPRING_DATA_REDIS) {
            client = SpringDataRedis.nativeClient(context);
        }
        return client;
    }

    static LeaseStore create(LeaseholdProperties properties, ApplicationContext context) {
        String prefix = properties.getRedis().getKeyPrefix();
        if (properties.getRedis().getUrl() != null) {
            RedisURI uri = RedisURI.create(properties.getRedis().getUrl());
            uri.setTimeout(properties.getRedis().getCommandTimeout());
            RedisClient owned = RedisClient.create(uri);
            // Connecting is bounded too: a hung server must not stall startup or a caller.
            owned.setOptions(io.lettuce.core.ClientOptions.builder()
                    .socketOptions(io.lettuce.core.SocketOptions.builder()
                            .connectTimeout(properties.getRedis().getCommandTimeout())
                            .build())
                    .build());
            return new OwningStore(
                    RedisLeaseStore.builder(owned).keyPrefix(prefix).build(), owned::shutdown);
        }
        AbstractRedisClient client = client(context);
        if (client instanceof RedisClusterClient cluster) {
            return RedisLeaseStore.builder(cluster).keyPrefix(prefix).build();
        }
        if (client instanceof RedisClient standalone) {
            return RedisLeaseStore.builder(standalone).keyPrefix(prefix).build();
        }
        throw new IllegalStateException(
                "leasehold.backend=redis needs leasehold.redis.url, a Lettuce RedisClient bean or"
                        + " Spring Data Redis with Lettuce; none is configured");
    }

    /** Reads the native client of Spring Data Redis's connection factory; loaded only when it is present. */
    private static final class SpringDataRedis {
        static AbstractRedisClient nativeClient(ApplicationContext context) {
            var factory = context.getBeanProvider(
                            org.springframework.data.redis.connection.lettuce.LettuceConnectionFactory.class)
                    .getIfAvailable();
            return factory == null ? null : factory.getNativeClient();
        }
    }
}
