package dev.leasehold.etcd;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import dev.leasehold.LeaseInfo;
import dev.leasehold.LeaseStoreException;
import dev.leasehold.LockKey;
import dev.leasehold.spi.AcquireResult;
import dev.leasehold.spi.Grant;
import dev.leasehold.spi.Renewal;
import dev.leasehold.testkit.EtcdCluster;
import dev.leasehold.testkit.TcpProxy;
import dev.leasehold.testkit.TestServices;
import io.etcd.jetcd.Client;
import java.net.URI;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * Keys a store grants close together share one etcd lease, so holding many keys costs etcd a lease
 * grant per third of the lease time and one keep-alive per renewal batch, not one of each per key;
 * and no operation on one key ends another key's hold. Counted at the server: etcd's own message
 * counters ({@code grpc_server_msg_received_total} on its {@code /metrics}), on a node of this
 * test's own.
 */
class EtcdSharedLeaseTest {

    private static final Duration LEASE = Duration.ofSeconds(30);

    private static EtcdCluster etcd;
    private static Client client;
    private static Client other;

    @BeforeAll
    static void start() throws Exception {
        etcd = TestServices.etcdCluster(1);
        client = Client.builder()
                .endpoints(etcd.endpoints().toArray(String[]::new))
                .build();
        other = Client.builder()
                .endpoints(etcd.endpoints().toArray(String[]::new))
                .build();
    }

    @AfterAll
    static void stop() {
        if (client != null) {
            client.close();
            other.close();
        }
        if (etcd != null) {
            etcd.close();
        }
    }

    @Test
    void keysTakenTogetherCostEtcdOneLeaseAndOneKeepAlivePerBatchNotOneEachPerKey() throws Exception {
        EtcdLeaseStore store = EtcdLeaseStore.builder(client).build();
        List<Renewal> batch = new ArrayList<>();
        long grantsBefore = received("LeaseGrant");
        for (int i = 0; i < 100; i++) {
            LockKey key = LockKey.of("etcd-shared", "k" + i);
            assertThat(store.tryAcquire(key, "owner-" + i, LEASE)).isInstanceOf(AcquireResult.Granted.class);
            batch.add(new Renewal(key, "owner-" + i, LEASE));
        }
        long grants = received("LeaseGrant") - grantsBefore;

        long keepAlivesBefore = received("LeaseKeepAlive");
        List<Optional<Grant>> answers = store.renewAll(batch);
        long keepAlives = received("LeaseKeepAlive") - keepAlivesBefore;

        assertThat(answers).hasSize(100).allSatisfy(answer -> assertThat(answer).isPresent());
        // one lease per third of the lease time (10 s here); 100 keys are taken well within it
        assertThat(grants).as("etcd leases granted for 100 keys").isLessThanOrEqualTo(3);
        assertThat(keepAlives).as("keep-alive messages for a batch of 100 keys").isLessThanOrEqualTo(3);
        assertThat(store.inspect(batch.get(99).key()))
                .map(LeaseInfo::remaining)
                .hasValueSatisfying(left -> assertThat(left).isGreaterThan(LEASE.minusSeconds(5)));
        batch.forEach(r -> store.release(r.key(), r.owner()));
        store.close();
    }

    @Test
    void aTryOfAHeldKeyAsksEtcdForNoLease() throws Exception {
        EtcdLeaseStore holder = EtcdLeaseStore.builder(client).build();
        EtcdLeaseStore trier = EtcdLeaseStore.builder(other).build();
        LockKey key = LockKey.of("etcd-shared", "busy");
        assertThat(holder.tryAcquire(key, "holder", LEASE)).isInstanceOf(AcquireResult.Granted.class);
        assertThat(trier.tryAcquire(LockKey.of("etcd-shared", "warm"), "warm", LEASE))
                .isInstanceOf(AcquireResult.Granted.class);

        long grantsBefore = received("LeaseGrant");
        long revokesBefore = received("LeaseRevoke");
        for (int i = 0; i < 20; i++) {
            assertThat(trier.tryAcquire(key, "trier-" + i, LEASE)).isInstanceOf(AcquireResult.Busy.class);
        }

        assertThat(received("LeaseGrant") - grantsBefore)
                .as("leases granted by 20 refused tries")
                .isZero();
        assertThat(received("LeaseRevoke") - revokesBefore)
                .as("leases revoked by 20 refused tries")
                .isZero();
        holder.release(key, "holder");
        trier.release(LockKey.of("etcd-shared", "warm"), "warm");
        holder.close();
        trier.close();
    }

    @Test
    void releasingOrForceReleasingOneKeyLeavesTheOtherKeysOnItsEtcdLeaseHeld() {
        EtcdLeaseStore store = EtcdLeaseStore.builder(client).build();
        EtcdLeaseStore operator = EtcdLeaseStore.builder(other).build();
        LockKey released = LockKey.of("etcd-shared", "released");
        LockKey forced = LockKey.of("etcd-shared", "forced");
        LockKey kept = LockKey.of("etcd-shared", "kept");
        store.tryAcquire(released, "a", LEASE);
        store.tryAcquire(forced, "b", LEASE);
        long fence = ((AcquireResult.Granted) store.tryAcquire(kept, "c", LEASE))
                .grant()
                .fence();

        assertThat(store.release(released, "a")).isTrue();
        assertThat(operator.forceRelease(forced)).isTrue();

        assertThat(store.renew(forced, "b", LEASE)).as("the key forced away").isEmpty();
        assertThat(store.renew(kept, "c", LEASE)).map(Grant::fence).contains(fence);
        assertThat(operator.inspect(kept)).map(LeaseInfo::ownerToken).contains("c");
        assertThat(operator.tryAcquire(kept, "intruder", LEASE)).isInstanceOf(AcquireResult.Busy.class);
        store.release(kept, "c");
        store.close();
        operator.close();
    }

    @Test
    void aGrantAfterTheSharedEtcdLeaseWentAwayIsBoundToANewOne() throws Exception {
        EtcdLeaseStore store = EtcdLeaseStore.builder(client).build();
        LockKey first = LockKey.of("etcd-shared", "before-revoke");
        LockKey second = LockKey.of("etcd-shared", "after-revoke");
        assertThat(store.tryAcquire(first, "a", LEASE)).isInstanceOf(AcquireResult.Granted.class);
        long lease = etcdLeaseOf(first);
        // as etcd does when the lease expires while this process is paused
        other.getLeaseClient().revoke(lease).get(5, TimeUnit.SECONDS);

        assertThat(store.tryAcquire(second, "b", LEASE)).isInstanceOf(AcquireResult.Granted.class);

        assertThat(etcdLeaseOf(second)).isNotEqualTo(lease);
        assertThat(store.renew(second, "b", LEASE)).isPresent();
        assertThat(store.renew(first, "a", LEASE))
                .as("the key on the lease that went away")
                .isEmpty();
        store.release(second, "b");
        store.close();
    }

    @Test
    void aSharedLeaseKeptAliveByRenewalsTakesLaterGrantsAndOneNotKeptAliveDoesNot() throws Exception {
        EtcdLeaseStore store = EtcdLeaseStore.builder(client).build();
        Duration lease = Duration.ofSeconds(3); // a new grant needs the lease confirmed within 1 s
        LockKey renewed = LockKey.of("etcd-shared", "renewed");
        assertThat(store.tryAcquire(renewed, "a", lease)).isInstanceOf(AcquireResult.Granted.class);
        long shared = etcdLeaseOf(renewed);
        long start = System.nanoTime();
        while (System.nanoTime() - start < TimeUnit.MILLISECONDS.toNanos(2_500)) {
            Thread.sleep(300); // the time that passes is what is tested: 2.5 s of renewals
            assertThat(store.renew(renewed, "a", lease)).isPresent();
        }
        LockKey later = LockKey.of("etcd-shared", "later");
        Grant laterGrant = ((AcquireResult.Granted) store.tryAcquire(later, "b", lease)).grant();
        assertThat(etcdLeaseOf(later)).as("a grant 2.5 s after the lease's own").isEqualTo(shared);
        assertThat(laterGrant.remaining()).isGreaterThan(Duration.ofMillis(2_000));

        Thread.sleep(1_200); // no renewal for more than a third of the TTL
        LockKey last = LockKey.of("etcd-shared", "after-a-pause");
        Grant lastGrant = ((AcquireResult.Granted) store.tryAcquire(last, "c", lease)).grant();
        assertThat(etcdLeaseOf(last))
                .as("a grant after the lease went unconfirmed")
                .isNotEqualTo(shared);
        assertThat(lastGrant.remaining()).isGreaterThan(Duration.ofMillis(2_000));
        store.release(renewed, "a");
        store.release(later, "b");
        store.release(last, "c");
        store.close();
    }

    @Test
    void aKeyWhoseReleaseFailedIsDeletedOnceTheStoreRenewsAgain() throws Exception {
        URI node = URI.create(etcd.endpoint(0));
        try (TcpProxy link = TcpProxy.to(node.getHost(), node.getPort());
                Client through = Client.builder()
                        .endpoints("http://" + link.host() + ":" + link.port())
                        .build()) {
            EtcdLeaseStore store = EtcdLeaseStore.builder(through)
                    .timeout(Duration.ofSeconds(1))
                    .build();
            EtcdLeaseStore observer = EtcdLeaseStore.builder(other).build();
            LockKey orphan = LockKey.of("etcd-shared", "release-failed");
            LockKey sibling = LockKey.of("etcd-shared", "still-held");
            assertThat(store.tryAcquire(orphan, "gone", LEASE)).isInstanceOf(AcquireResult.Granted.class);
            assertThat(store.tryAcquire(sibling, "alive", LEASE)).isInstanceOf(AcquireResult.Granted.class);

            link.blackhole(TcpProxy.Direction.BOTH);
            assertThatThrownBy(() -> store.release(orphan, "gone")).isInstanceOf(LeaseStoreException.class);
            link.heal();

            // The sibling's renewals keep the shared etcd lease alive; they also send the delete again.
            await().atMost(Duration.ofSeconds(15)).ignoreExceptions().untilAsserted(() -> {
                assertThat(store.renewAll(List.of(new Renewal(sibling, "alive", LEASE))))
                        .singleElement()
                        .satisfies(answer -> assertThat(answer).isPresent());
                assertThat(observer.inspect(orphan))
                        .as("the key whose release failed")
                        .isEmpty();
            });
            assertThat(observer.inspect(sibling)).map(LeaseInfo::ownerToken).contains("alive");
            store.release(sibling, "alive");
            store.close();
            observer.close();
        }
    }

    @Test
    void aBatchRightAfterALeaseWasConfirmedSendsNoKeepAliveAndStillReadsEachKey() throws Exception {
        EtcdLeaseStore store = EtcdLeaseStore.builder(client).build();
        EtcdLeaseStore operator = EtcdLeaseStore.builder(other).build();
        List<Renewal> batch = new ArrayList<>();
        for (int i = 0; i < 3; i++) {
            LockKey key = LockKey.of("etcd-shared", "confirmed-" + i);
            assertThat(store.tryAcquire(key, "owner-" + i, LEASE)).isInstanceOf(AcquireResult.Granted.class);
            batch.add(new Renewal(key, "owner-" + i, LEASE));
        }
        assertThat(operator.forceRelease(batch.get(1).key())).isTrue();

        long keepAlivesBefore = received("LeaseKeepAlive");
        List<Optional<Grant>> answers = store.renewAll(batch); // the lease was granted just now

        assertThat(received("LeaseKeepAlive") - keepAlivesBefore)
                .as("keep-alives")
                .isZero();
        assertThat(answers.get(0)).isPresent();
        assertThat(answers.get(1)).as("the key forced away meanwhile").isEmpty();
        assertThat(answers.get(2)).isPresent();
        assertThat(answers.get(2).orElseThrow().remaining())
                .isGreaterThan(LEASE.multipliedBy(5).dividedBy(6));
        batch.forEach(r -> store.release(r.key(), r.owner()));
        store.close();
        operator.close();
    }

    @Test
    void aLeaseNotConfirmedLatelyIsKeptAliveByTheNextBatch() throws Exception {
        EtcdLeaseStore store = EtcdLeaseStore.builder(client).build();
        Duration lease = Duration.ofSeconds(3);
        LockKey key = LockKey.of("etcd-shared", "unconfirmed");
        assertThat(store.tryAcquire(key, "o", lease)).isInstanceOf(AcquireResult.Granted.class);
        Thread.sleep(700); // the time that passes is what is tested: more than a twelfth of 3 s

        long keepAlivesBefore = received("LeaseKeepAlive");
        List<Optional<Grant>> answers = store.renewAll(List.of(new Renewal(key, "o", lease)));

        long batch = received("LeaseKeepAlive") - keepAlivesBefore;
        // what one keep-alive costs at the server: a single renewal always sends one
        long beforeOne = received("LeaseKeepAlive");
        assertThat(store.renew(key, "o", lease)).isPresent();
        long one = received("LeaseKeepAlive") - beforeOne;

        assertThat(one).isPositive();
        assertThat(batch)
                .as("keep-alive messages of the batch, against one keep-alive's")
                .isEqualTo(one);
        assertThat(answers.get(0)).map(Grant::remaining).contains(lease);
        store.release(key, "o");
        store.close();
    }

    @Test
    void aReleaseThatFailsAgainWhileTheFirstIsBeingSentIsNotForgotten() throws Exception {
        EtcdLeaseStore observer = EtcdLeaseStore.builder(other).build();
        EtcdOrphans orphans = new EtcdOrphans(client.getKVClient(), new EtcdKeys("leasehold/"), Duration.ofSeconds(5));
        LockKey key = LockKey.of("etcd-shared", "released-twice");
        assertThat(observer.tryAcquire(key, "o", LEASE)).isInstanceOf(AcquireResult.Granted.class);

        orphans.add(key, "o");
        orphans.retry(); // the first release's delete is on its way
        orphans.add(key, "o"); // a second release of the key fails meanwhile

        // the answer to the first release's delete must not end the second release
        await().during(Duration.ofMillis(500)).atMost(Duration.ofSeconds(5)).until(() -> orphans.pending() == 1);
        orphans.retry();
        await().atMost(Duration.ofSeconds(5)).until(() -> orphans.pending() == 0);
        assertThat(observer.inspect(key)).isEmpty();
        observer.close();
    }

    private static long etcdLeaseOf(LockKey key) throws Exception {
        return other.getKVClient()
                .get(new EtcdKeys("leasehold/").lease(key))
                .get(5, TimeUnit.SECONDS)
                .getKvs()
                .get(0)
                .getLease();
    }

    /** etcd's count of messages received by one gRPC method. */
    private static long received(String method) throws Exception {
        return EtcdMetrics.sum(etcd.endpoint(0), "grpc_server_msg_received_total", method);
    }
}
