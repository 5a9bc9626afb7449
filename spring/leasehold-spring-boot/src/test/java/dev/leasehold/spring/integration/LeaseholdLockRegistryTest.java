package dev.leasehold.spring.integration;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.leasehold.LockService;
import dev.leasehold.memory.InMemoryLeaseStore;
import dev.leasehold.redis.RedisLeaseStore;
import dev.leasehold.spring.LeaseholdAutoConfigurations;
import dev.leasehold.testkit.TestServices;
import io.lettuce.core.RedisClient;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.locks.Lock;
import org.junit.jupiter.api.Test;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.autoconfigure.aop.AopAutoConfiguration;
import org.springframework.boot.test.context.FilteredClassLoader;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.integration.support.locks.LockRegistry;

/** The Spring Integration lock registry: two "instances" (two lock services) on one real Redis. */
class LeaseholdLockRegistryTest {

    @Test
    void twoRegistriesOnOneRedisExcludeEachOther() throws Exception {
        RedisClient client = RedisClient.create(TestServices.redis().uri());
        String prefix = "lh-test-" + UUID.randomUUID() + ":";
        try (LockService one = LockService.builder(RedisLeaseStore.builder(client)
                                .keyPrefix(prefix)
                                .build())
                        .build();
                LockService two = LockService.builder(RedisLeaseStore.builder(client)
                                .keyPrefix(prefix)
                                .build())
                        .build()) {
            List<LockRegistry<Lock>> registries = List.of(
                    new LeaseholdLockRegistry(one, "integration", Duration.ofSeconds(10)),
                    new LeaseholdLockRegistry(two, "integration", Duration.ofSeconds(10)));
            long[] counter = {0};
            AtomicInteger inside = new AtomicInteger();
            AtomicInteger mostInside = new AtomicInteger();
            ExecutorService pool = Executors.newFixedThreadPool(4);
            try {
                List<Future<?>> workers = new ArrayList<>();
                for (int t = 0; t < 4; t++) {
                    LockRegistry<Lock> registry = registries.get(t % 2);
                    workers.add(pool.submit(() -> {
                        for (int i = 0; i < 25; i++) {
                            Lock lock = registry.obtain("orders/batch 7"); // not a valid key part: hashed
                            lock.lock();
                            try {
                                mostInside.accumulateAndGet(inside.incrementAndGet(), Math::max);
                                long read = counter[0];
                                Thread.yield();
                                counter[0] = read + 1;
                                inside.decrementAndGet();
                            } finally {
                                lock.unlock();
                            }
                        }
                        return null;
                    }));
                }
                for (Future<?> worker : workers) {
                    worker.get(60, TimeUnit.SECONDS);
                }
            } finally {
                pool.shutdownNow();
            }
            assertThat(counter[0]).isEqualTo(100);
            assertThat(mostInside.get()).isEqualTo(1);

            Lock held = registries.get(0).obtain("leader");
            assertThat(held.tryLock()).isTrue();
            try {
                assertThat(registries.get(1).obtain("leader").tryLock(100, TimeUnit.MILLISECONDS))
                        .as("held by the other instance")
                        .isFalse();
                assertThat(held.tryLock()).as("re-entry by the holder").isTrue();
                held.unlock();
            } finally {
                held.unlock();
            }
            assertThat(registries.get(1).obtain("leader").tryLock()).isTrue();
            registries.get(1).obtain("leader").unlock();
        } finally {
            client.shutdown();
        }
    }

    @Test
    void unlockByAThreadThatDoesNotHoldItIsRefused() throws Exception {
        try (LockService locks = LockService.builder(new InMemoryLeaseStore()).build()) {
            Lock lock = new LeaseholdLockRegistry(locks, "integration", Duration.ofSeconds(5)).obtain("k");
            lock.lock();
            try {
                ExecutorService other = Executors.newSingleThreadExecutor();
                try {
                    Future<?> stranger = other.submit(lock::unlock);
                    assertThatThrownBy(stranger::get).hasCauseInstanceOf(IllegalMonitorStateException.class);
                } finally {
                    other.shutdownNow();
                }
            } finally {
                lock.unlock();
            }
            assertThatThrownBy(lock::newCondition).isInstanceOf(UnsupportedOperationException.class);
        }
    }

    @Test
    void theRegistryIsConfiguredWithSpringIntegrationAndBacksOffWithoutIt() {
        ApplicationContextRunner runner = new ApplicationContextRunner()
                .withConfiguration(AutoConfigurations.of(LeaseholdAutoConfigurations.with(AopAutoConfiguration.class)))
                .withPropertyValues("leasehold.backend=memory", "leasehold.stale-scan.enabled=false");
        runner.run(context -> assertThat(context).hasSingleBean(LeaseholdLockRegistry.class));
        runner.withClassLoader(new FilteredClassLoader("org.springframework.integration"))
                .run(context -> {
                    assertThat(context).hasNotFailed();
                    assertThat(context).doesNotHaveBean(LeaseholdLockRegistry.class);
                });
    }
}
