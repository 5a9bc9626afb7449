package dev.leasehold;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * Who owns a lease: re-entry by thread (the default) or by an explicit {@link LockOwner}, a mode
 * without re-entry for pooled tasks, batches with an explicit owner, and two processes that share
 * one owner token.
 */
class LeaseOwnersTest extends EngineHarness {

    private static final LockKey A = LockKey.of("t", "owners", "a");
    private static final LockKey B = LockKey.of("t", "owners", "b");

    @Test
    void aNonReentrantServiceNeverLetsAPooledTaskEnterAnotherTasksLease() throws Exception {
        ScriptedStore store = store(true);
        LockService service = service(store, b -> b.reentrant(false));
        ExecutorService pool = Executors.newSingleThreadExecutor();
        try {
            // The first task leaves its lease open (handed on to a callback, say) and returns.
            Lease left = pool.submit(() ->
                            service.tryAcquire(KEY, LeaseOptions.defaults()).orElseThrow())
                    .get(5, TimeUnit.SECONDS);
            // The next task on the same thread is another critical section: it must not enter.
            Optional<Lease> next = pool.submit(() -> service.tryAcquire(KEY, LeaseOptions.defaults()))
                    .get(5, TimeUnit.SECONDS);
            assertThat(next).isEmpty();
            assertThat(left.holdCount()).isEqualTo(1);

            LockOwner owner = LockOwner.create("task");
            try (Lease first =
                    service.tryAcquire(A, LeaseOptions.defaults(), owner).orElseThrow()) {
                assertThat(service.tryAcquire(A, LeaseOptions.defaults(), owner))
                        .as("not even the same explicit owner re-enters")
                        .isEmpty();
                assertThat(first.holdCount()).isEqualTo(1);
            }
            left.close();
            assertThat(store.backend.inspect(KEY)).isEmpty();
        } finally {
            pool.shutdownNow();
        }
    }

    @Test
    void byDefaultTheSameThreadReentersAndAnotherThreadDoesNot() throws Exception {
        ScriptedStore store = store(true);
        LockService service = service(store);
        try (Lease outer = service.tryAcquire(KEY, LeaseOptions.defaults()).orElseThrow();
                Lease inner = service.tryAcquire(KEY, LeaseOptions.defaults()).orElseThrow()) {
            assertThat(inner.fence()).isEqualTo(outer.fence());
            assertThat(outer.holdCount()).isEqualTo(2);
            Future<Optional<Lease>> other = async(() -> service.tryAcquire(KEY, LeaseOptions.defaults()));
            assertThat(await(other)).isEmpty();
        }
        assertThat(store.backend.inspect(KEY)).isEmpty();
    }

    @Test
    void anExplicitOwnerReentersFromAnyThreadButATaskWithItsOwnOwnerDoesNot() throws Exception {
        ScriptedStore store = store(true);
        LockService service = service(store);
        LockOwner job = LockOwner.create("job");
        try (Lease first = service.tryAcquire(KEY, LeaseOptions.defaults(), job).orElseThrow()) {
            Lease again = await(async(
                    () -> service.tryAcquire(KEY, LeaseOptions.defaults(), job).orElseThrow()));
            assertThat(again.fence()).isEqualTo(first.fence());
            assertThat(first.holdCount()).isEqualTo(2);
            again.close();
            assertThat(service.tryAcquire(KEY, LeaseOptions.defaults(), LockOwner.create("another task")))
                    .isEmpty();
        }
    }

    @Test
    void aBatchTakesAnExplicitOwner() throws Exception {
        ScriptedStore store = store(true);
        LockService service = service(store);
        LockOwner owner = LockOwner.create("batch job");
        try (LeaseGroup group = service.acquireAll(List.of(B, A), LeaseOptions.defaults(), owner)) {
            assertThat(group.leases()).extracting(Lease::key).containsExactly(A, B);
            assertThat(group.leases())
                    .allSatisfy(l -> assertThat(l.ownerToken()).startsWith(owner.token() + "."));
            // The same owner on another thread re-enters a key of the batch.
            Lease reentered = await(async(
                    () -> service.tryAcquire(B, LeaseOptions.defaults(), owner).orElseThrow()));
            assertThat(reentered.fence()).isEqualTo(group.leases().get(1).fence());
            reentered.close();
            assertThat(service.tryAcquireAll(List.of(A), LeaseOptions.defaults(), LockOwner.create("other")))
                    .isEmpty();
            assertThat(service.tryAcquireAll(List.of(A, B), LeaseOptions.defaults(), owner))
                    .hasValueSatisfying(LeaseGroup::close);
        }
        assertThat(store.backend.inspect(A)).isEmpty();
        assertThat(store.backend.inspect(B)).isEmpty();
    }

    @Test
    void twoProcessesSharingOneOwnerTokenNeverBothHold() throws Exception {
        ScriptedStore store = store(true);
        LockService first = service(store);
        LockService second = service(store);
        LockOwner shared = LockOwner.withToken("shared-owner-token-0001", "configured twice");
        Lease held = first.tryAcquire(KEY, LeaseOptions.defaults(), shared).orElseThrow();

        assertThat(second.tryAcquire(KEY, LeaseOptions.defaults(), shared)).isEmpty();

        held.close();
        assertThat(store.backend.inspect(KEY)).isEmpty();
        try (Lease next =
                second.tryAcquire(KEY, LeaseOptions.defaults(), shared).orElseThrow()) {
            assertThat(first.tryAcquire(KEY, LeaseOptions.defaults(), LockOwner.create("third")))
                    .isEmpty();
            assertThat(next.isHeld()).isTrue();
        }
    }

    @Test
    void aLongOwnerTokenStillFitsTheStoresLimit() {
        ScriptedStore store = store(true);
        LockService service = service(store);
        LockOwner owner = LockOwner.withToken("x".repeat(128), "long");
        try (Lease lease =
                service.tryAcquire(KEY, LeaseOptions.defaults(), owner).orElseThrow()) {
            assertThat(lease.ownerToken()).hasSize(128).startsWith("x".repeat(111) + ".");
            assertThat(store.backend.inspect(KEY).orElseThrow().ownerToken()).isEqualTo(lease.ownerToken());
        }
    }

    @Test
    void aGrantOfALeaseAcquiredWhileWaitingIsAlsoPerGrant() throws Exception {
        ScriptedStore store = store(true);
        LockService service = service(store);
        LockOwner owner = LockOwner.create("waiter");
        String first;
        try (Lease lease = service.acquire(KEY, waiting(Duration.ofSeconds(30), Duration.ofSeconds(5)), owner)) {
            first = lease.ownerToken();
        }
        try (Lease lease = service.acquire(KEY, waiting(Duration.ofSeconds(30), Duration.ofSeconds(5)), owner)) {
            assertThat(lease.ownerToken()).startsWith(owner.token()).isNotEqualTo(first);
        }
    }

    @Test
    void grantsWithoutAnExplicitOwnerHaveTokensOfTheirOwnAndTwoServicesNeverShareOne() {
        ScriptedStore store = store(true);
        LockService one = service(store);
        LockService two = service(store);
        java.util.Set<String> tokens = new java.util.HashSet<>();
        for (LockService service : List.of(one, two)) {
            for (int i = 0; i < 3; i++) {
                try (Lease lease = service.tryAcquire(KEY, lease(Duration.ofSeconds(30), false))
                        .orElseThrow()) {
                    assertThat(tokens.add(lease.ownerToken())).as("a new token").isTrue();
                    assertThat(lease.ownerToken()).matches("[0-9a-f]{32}");
                }
            }
        }
    }

    @Test
    void twoGrantsOfOneServiceAreToldApartWhereTheirTokensAreShownAbbreviated() {
        ScriptedStore store = store(true);
        LockService service = service(store);
        LockKey other = LockKey.of("t", "other");
        try (Lease one = service.tryAcquire(KEY, lease(Duration.ofSeconds(30), false))
                        .orElseThrow();
                Lease two = service.tryAcquire(other, lease(Duration.ofSeconds(30), false))
                        .orElseThrow()) {
            assertThat(one.ownerToken()).isNotEqualTo(two.ownerToken());
            // What logs, events, the held-leases view and the endpoint show of a grant's owner.
            assertThat(service.heldLeases())
                    .extracting(HeldLeaseInfo::owner)
                    .as("owners of two grants as shown")
                    .doesNotHaveDuplicates()
                    .hasSize(2);
            assertThat(events)
                    .filteredOn(e -> e.type() == LeaseEventType.ACQUIRED)
                    .extracting(LeaseEvent::owner)
                    .doesNotHaveDuplicates();
        }
    }
}
