package dev.leasehold.examples.loan;

import dev.leasehold.LeaseStoreException;
import dev.leasehold.redis.RedisLeaseStore;
import dev.leasehold.spi.ForwardingLeaseStore;
import dev.leasehold.spi.LeaseStore;
import dev.leasehold.spring.LeaseholdProperties;
import io.lettuce.core.ClientOptions;
import io.lettuce.core.RedisClient;
import io.lettuce.core.RedisException;
import io.lettuce.core.RedisURI;
import io.lettuce.core.SocketOptions;
import io.lettuce.core.TimeoutOptions;
import java.time.Duration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnProperty;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;

/**
 * The Redis lease store, connected on first use instead of at startup: the service starts while
 * Redis is down (needed for the degrade switch, S2.14: bypass mode must start and run without it),
 * and every call fails fast, within {@code leasehold.redis.command-timeout}, while Redis stays
 * unreachable; the next call connects again. Commands issued while disconnected are rejected at
 * once instead of queued. Every operation is passed on to the Redis store as it was called
 * ({@code LazyRedisLeaseStoreTest}). Thread-safe.
 */
final class LazyRedisLeaseStore extends ForwardingLeaseStore {

    private final RedisURI uri;
    private final String keyPrefix;
    private final Duration timeout;
    private RedisClient client;
    private volatile RedisLeaseStore store;

    LazyRedisLeaseStore(String url, String keyPrefix, Duration timeout) {
        this.uri = RedisURI.create(url);
        this.uri.setTimeout(timeout);
        this.keyPrefix = keyPrefix;
        this.timeout = timeout;
    }

    private RedisLeaseStore store(String operation, String key) {
        RedisLeaseStore ready = store;
        if (ready != null) {
            return ready;
        }
        synchronized (this) {
            if (store == null) {
                if (client == null) {
                    client = RedisClient.create(uri);
                    client.setOptions(ClientOptions.builder()
                            .socketOptions(SocketOptions.builder()
                                    .connectTimeout(timeout)
                                    .build())
                            .timeoutOptions(TimeoutOptions.enabled(timeout))
                            .disconnectedBehavior(ClientOptions.DisconnectedBehavior.REJECT_COMMANDS)
                            .build());
                }
                try {
                    store = RedisLeaseStore.builder(client).keyPrefix(keyPrefix).build();
                } catch (RedisException | LeaseStoreException e) {
                    throw e instanceof LeaseStoreException lse ? lse : new LeaseStoreException(operation, key, e);
                }
            }
            return store;
        }
    }

    /** Connects on the first call, and again on the next call after a failed connect. */
    @Override
    protected LeaseStore delegate() {
        return store("connect", uri.getHost() + ":" + uri.getPort());
    }

    /** Known before connecting, so that a store that never connected still answers for waits. */
    @Override
    public boolean supportsReleaseNotifications() {
        return true;
    }

    @Override
    public String name() {
        return "redis";
    }

    @Override
    public synchronized void close() {
        if (store != null) {
            store.close();
        }
        if (client != null) {
            client.shutdown(Duration.ZERO, Duration.ofSeconds(2));
        }
    }

    /** The service's lease store when {@code leasehold.backend=redis}. */
    @Configuration(proxyBeanMethods = false)
    @ConditionalOnProperty(name = "leasehold.backend", havingValue = "redis")
    static class RedisBackend {
        @Bean(destroyMethod = "close")
        LeaseStore loanLeaseStore(LeaseholdProperties properties) {
            if (properties.getRedis().getUrl() == null) {
                throw new IllegalStateException("leasehold.backend=redis needs leasehold.redis.url");
            }
            return new LazyRedisLeaseStore(
                    properties.getRedis().getUrl(),
                    properties.getRedis().getKeyPrefix(),
                    properties.getRedis().getCommandTimeout());
        }
    }
}
