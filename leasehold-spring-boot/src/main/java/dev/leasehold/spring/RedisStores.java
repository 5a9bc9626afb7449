package dev.leasehold.spring;

import dev.leasehold.LeaseInfo;
import dev.leasehold.LockKey;
import dev.leasehold.redis.RedisLeaseStore;
import dev.leasehold.spi.AcquireResult;
import dev.leasehold.spi.Grant;
import dev.leasehold.spi.LeaseStore;
import dev.leasehold.spi.ReleaseNotice;
import dev.leasehold.spi.ReleaseSubscription;
import io.lettuce.core.AbstractRedisClient;
import io.lettuce.core.RedisClient;
import io.lettuce.core.RedisURI;
import io.lettuce.core.cluster.RedisClusterClient;
import java.time.Duration;
import java.util.List;
import java.util.Optional;
import java.util.function.Consumer;
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
            return new ClosingClient(
                    RedisLeaseStore.builder(owned).keyPrefix(prefix).build(), owned);
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

    /**
     * A store that also shuts down the client it was given; every operation the Redis store has of
     * its own is passed on, the batch and the asynchronous acquire included ({@code
     * LeaseholdAutoConfigurationTest.aRedisStoreWithItsOwnClientKeepsTheOneScriptBatchAndTheAsynchronousAcquire}).
     */
    private record ClosingClient(RedisLeaseStore store, RedisClient client) implements LeaseStore {
        @Override
        public AcquireResult tryAcquire(LockKey key, String owner, Duration leaseFor) {
            return store.tryAcquire(key, owner, leaseFor);
        }

        @Override
        public java.util.concurrent.CompletionStage<AcquireResult> tryAcquireAsync(
                LockKey key, String owner, Duration leaseFor) {
            return store.tryAcquireAsync(key, owner, leaseFor);
        }

        @Override
        public dev.leasehold.spi.BatchAcquireResult tryAcquireAll(List<LockKey> keys, String owner, Duration leaseFor) {
            return store.tryAcquireAll(keys, owner, leaseFor);
        }

        @Override
        public Optional<Grant> renew(LockKey key, String owner, Duration leaseFor) {
            return store.renew(key, owner, leaseFor);
        }

        @Override
        public boolean release(LockKey key, String owner) {
            return store.release(key, owner);
        }

        @Override
        public Optional<LeaseInfo> inspect(LockKey key) {
            return store.inspect(key);
        }

        @Override
        public boolean forceRelease(LockKey key) {
            return store.forceRelease(key);
        }

        @Override
        public List<LeaseInfo> list(String namespace, int limit) {
            return store.list(namespace, limit);
        }

        @Override
        public boolean supportsReleaseNotifications() {
            return true;
        }

        @Override
        public ReleaseSubscription subscribe(LockKey key, Consumer<ReleaseNotice> onRelease) {
            return store.subscribe(key, onRelease);
        }

        @Override
        public ReleaseSubscription subscribeForceReleases(Consumer<ReleaseNotice> onForceRelease) {
            return store.subscribeForceReleases(onForceRelease);
        }

        @Override
        public String name() {
            return store.name();
        }

        @Override
        public void close() {
            store.close();
            client.shutdown();
        }
    }
}
