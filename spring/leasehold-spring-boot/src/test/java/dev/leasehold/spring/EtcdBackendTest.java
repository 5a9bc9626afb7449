package dev.leasehold.spring;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import dev.leasehold.LeaseOptions;
import dev.leasehold.LockKey;
import dev.leasehold.LockOwner;
import dev.leasehold.LockService;
import dev.leasehold.etcd.EtcdLeaseStore;
import dev.leasehold.spi.LeaseStore;
import dev.leasehold.spring.actuator.LeaseStoreHealthIndicator;
import dev.leasehold.spring.actuator.LeaseholdMetricNames;
import dev.leasehold.testkit.EtcdCluster;
import dev.leasehold.testkit.TestServices;
import io.etcd.jetcd.ByteSequence;
import io.etcd.jetcd.Client;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.autoconfigure.aop.AopAutoConfiguration;
import org.springframework.boot.health.contributor.Health;
import org.springframework.boot.health.contributor.Status;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;

/**
 * {@code leasehold.backend=etcd} on a real etcd node the test starts on a loopback port (skipped,
 * naming the binary, where etcd is not installed): the store is chosen, a lock works end to end
 * with its meters, health follows the node, bad settings fail startup naming the property, and an
 * application's own jetcd client is used and left open.
 */
class EtcdBackendTest {

    private static EtcdCluster etcd;

    private final ApplicationContextRunner runner = new ApplicationContextRunner()
            .withConfiguration(AutoConfigurations.of(LeaseholdAutoConfigurations.with(AopAutoConfiguration.class)))
            .withPropertyValues(
                    "leasehold.backend=etcd",
                    "leasehold.etcd.key-prefix=starter-" + System.nanoTime() + "/",
                    "leasehold.stale-scan.enabled=false");

    @BeforeAll
    static void startEtcd() throws Exception {
        etcd = TestServices.etcdCluster(1);
    }

    @AfterAll
    static void stopEtcd() {
        if (etcd != null) {
            etcd.close();
        }
    }

    @Test
    void backendEtcdTakesALockEndToEndWithItsMetersAndClosesTheClientItCreated() {
        Client[] created = new Client[1];
        runner.withPropertyValues("leasehold.etcd.endpoints=" + etcd.endpoint(0), "leasehold.etcd.timeout=3s")
                .withBean(MeterRegistry.class, SimpleMeterRegistry::new)
                .run(context -> {
                    assertThat(context).hasNotFailed();
                    LeaseStore store = context.getBean(LeaseStore.class);
                    assertThat(store.name()).isEqualTo("etcd");
                    assertThat(store).isInstanceOf(OwningStore.class);
                    OwningStore owning = (OwningStore) store;
                    assertThat(owning.store()).isInstanceOf(EtcdLeaseStore.class);
                    created[0] = (Client) owning.client();

                    LockService locks = context.getBean(LockService.class);
                    LockKey key = LockKey.of("starter", "etcd");
                    long first;
                    try (var lease =
                            locks.tryAcquire(key, LeaseOptions.defaults()).orElseThrow()) {
                        first = lease.fence();
                        assertThat(first).isPositive();
                        assertThat(store.inspect(key)).isPresent();
                        assertThat(locks.tryAcquire(key, LeaseOptions.defaults(), LockOwner.create("other")))
                                .as("a second owner while the first holds the key")
                                .isEmpty();
                    }
                    assertThat(store.inspect(key)).as("released in etcd").isEmpty();
                    try (var again =
                            locks.tryAcquire(key, LeaseOptions.defaults()).orElseThrow()) {
                        assertThat(again.fence()).isGreaterThan(first);
                    }

                    MeterRegistry registry = context.getBean(MeterRegistry.class);
                    assertThat(registry.find(LeaseholdMetricNames.LOCK_WAIT)
                                    .tag("outcome", "busy")
                                    .timer()
                                    .count())
                            .isEqualTo(1);
                    assertThat(registry.find(LeaseholdMetricNames.LOCK_HOLD)
                                    .timer()
                                    .count())
                            .isEqualTo(2);
                });
        // The client Leasehold created is closed with the context: it refuses further calls.
        assertThatThrownBy(() -> created[0]
                        .getKVClient()
                        .get(ByteSequence.from("x", StandardCharsets.UTF_8))
                        .get(5, TimeUnit.SECONDS))
                .isNotNull();
    }

    @Test
    void theApplicationsClientIsUsedAndNotClosed() throws Exception {
        try (Client own = Client.builder().endpoints(etcd.endpoint(0)).build()) {
            // Spring itself would close an AutoCloseable bean at shutdown; this one is the test's.
            runner.withBean(Client.class, () -> own, bean -> bean.setDestroyMethodName(""))
                    .run(context -> {
                        assertThat(context).hasNotFailed();
                        LeaseStore store = context.getBean(LeaseStore.class);
                        assertThat(store)
                                .as("not wrapped: the client is not ours to close")
                                .isInstanceOf(EtcdLeaseStore.class);
                        String clientBean = context.getBeanNamesForType(Client.class)[0];
                        assertThat(context.getBeanFactory().getDependentBeans(clientBean))
                                .as("the store is closed before the application's client")
                                .contains("leaseholdLeaseStore");
                        LockService locks = context.getBean(LockService.class);
                        try (var lease = locks.tryAcquire(LockKey.of("starter", "own-client"), LeaseOptions.defaults())
                                .orElseThrow()) {
                            assertThat(lease.fence()).isPositive();
                        }
                    });
            // The context is closed; the application's client still answers.
            assertThat(own.getKVClient()
                            .get(ByteSequence.from("x", StandardCharsets.UTF_8))
                            .get(5, TimeUnit.SECONDS)
                            .getKvs())
                    .isEmpty();
        }
    }

    @Test
    void healthIsUpWhileEtcdAnswersAndDownOnceTheNodeIsStopped() throws Exception {
        try (EtcdCluster own = TestServices.etcdCluster(1)) {
            runner.withPropertyValues(
                            "leasehold.etcd.endpoints=" + own.endpoint(0),
                            "leasehold.etcd.timeout=1s",
                            "leasehold.health.timeout=2s")
                    .run(context -> {
                        LeaseStoreHealthIndicator health = context.getBean(LeaseStoreHealthIndicator.class);
                        // The client connects on its first call, which may outlast one probe on a
                        // loaded machine: wait for the node to answer, then stop it.
                        Health up = await().atMost(Duration.ofSeconds(30))
                                .until(health::health, h -> h.getStatus().equals(Status.UP));
                        assertThat(up.getDetails()).containsEntry("backend", "etcd");

                        own.kill(0);
                        Health down = health.health();
                        assertThat(down.getStatus()).isEqualTo(Status.DOWN);
                        assertThat(down.getDetails())
                                .containsEntry("backend", "etcd")
                                .containsKey("error");
                    });
        }
    }

    @Test
    void noEndpointsAndNoClientFailStartupNamingTheProperty() {
        runner.run(context -> {
            assertThat(context).hasFailed();
            assertThat(context.getStartupFailure())
                    .rootCause()
                    .hasMessageContaining("leasehold.etcd.endpoints")
                    .hasMessageContaining("io.etcd.jetcd.Client");
        });
        runner.withPropertyValues("leasehold.etcd.endpoints=").run(context -> {
            assertThat(context).hasFailed();
            assertThat(context.getStartupFailure()).rootCause().hasMessageContaining("leasehold.etcd.endpoints");
        });
    }

    @Test
    void aMalformedEndpointFailsStartupNamingThePropertyAndTheValue() {
        for (String bad :
                new String[] {"127.0.0.1:2379", "http://", "http://host", "ftp://host:2379", "http://a b:1"}) {
            runner.withPropertyValues("leasehold.etcd.endpoints=http://127.0.0.1:2379," + bad)
                    .run(context -> {
                        assertThat(context).as(bad).hasFailed();
                        assertThat(context.getStartupFailure())
                                .as(bad)
                                .hasStackTraceContaining("leasehold.etcd.endpoints[1]")
                                .hasStackTraceContaining(bad);
                    });
        }
    }

    @Test
    void aBadKeyPrefixOrTimeoutFailsStartupNamingTheProperty() {
        runner.withPropertyValues("leasehold.etcd.endpoints=" + etcd.endpoint(0), "leasehold.etcd.key-prefix=a b")
                .run(context -> assertThat(context.getStartupFailure())
                        .hasStackTraceContaining("leasehold.etcd.key-prefix")
                        .hasStackTraceContaining("a b"));
        runner.withPropertyValues("leasehold.etcd.endpoints=" + etcd.endpoint(0), "leasehold.etcd.timeout=0s")
                .run(context -> assertThat(context.getStartupFailure())
                        .hasStackTraceContaining("leasehold.etcd.timeout must be > 0"));
    }
}
