package dev.leasehold.etcd;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import dev.leasehold.LeaseInfo;
import dev.leasehold.LeaseStoreException;
import dev.leasehold.LockKey;
import dev.leasehold.spi.AcquireResult;
import dev.leasehold.spi.Grant;
import dev.leasehold.testkit.TestServices;
import io.etcd.jetcd.ByteSequence;
import io.etcd.jetcd.Client;
import io.grpc.CallOptions;
import io.grpc.Channel;
import io.grpc.ClientCall;
import io.grpc.ClientInterceptor;
import io.grpc.ForwardingClientCall;
import io.grpc.Metadata;
import io.grpc.MethodDescriptor;
import io.grpc.Status;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * A transaction that binds the owner's key to a new etcd lease (a re-acquire, a renewal to another
 * length) commits in etcd, but its answer is held back in the client past the store's timeout; or
 * the transaction itself is held back until the store gave up on it. The owner held the key before
 * the call, so whatever the call reports, the key must still be the owner's afterwards, with its
 * fence, and another owner must find it busy.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class EtcdUnansweredTransactionTest {

    private static final Duration TIMEOUT = Duration.ofMillis(500);
    private static final Duration LEASE = Duration.ofSeconds(10);

    private static final TxnReplies replies = new TxnReplies();
    private static Client client;
    private static Client plain;

    private final LockKey key = LockKey.of("unanswered", UUID.randomUUID().toString());
    private EtcdLeaseStore store;
    private EtcdLeaseStore other;

    @BeforeAll
    static void connect() {
        TestServices.EtcdEndpoint etcd = TestServices.etcd();
        client = Client.builder()
                .endpoints(etcd.endpoints().toArray(String[]::new))
                .interceptor(replies)
                .build();
        plain = Client.builder()
                .endpoints(etcd.endpoints().toArray(String[]::new))
                .build();
    }

    @AfterAll
    static void disconnect() {
        if (client != null) {
            client.close();
            plain.close();
        }
    }

    @BeforeEach
    void stores() {
        store = EtcdLeaseStore.builder(client).timeout(TIMEOUT).build();
        other = EtcdLeaseStore.builder(plain).build();
    }

    @AfterEach
    void cleanUp() {
        replies.releaseAll();
        other.forceRelease(key);
        store.close();
        other.close();
    }

    @Test
    void aReacquireWhoseAnswerIsLostLeavesTheOwnerHoldingTheKey() {
        long fence = granted(store.tryAcquire(key, "o", LEASE)).fence();
        replies.holdNext(1);

        Optional<Grant> outcome = outcome(() -> granted(store.tryAcquire(key, "o", LEASE)));

        replies.awaitAnswersHeld(1); // etcd applied the transaction and answered; nobody heard it
        outcome.ifPresent(grant -> assertThat(grant.fence()).isEqualTo(fence));
        assertStillHeldBy("o", fence);
        assertThat(store.renew(key, "o", LEASE)).map(Grant::fence).contains(fence);
    }

    @Test
    void aRenewalToANewLengthWhoseAnswerIsLostLeavesTheOwnerHoldingTheKey() {
        long fence = granted(store.tryAcquire(key, "o", LEASE)).fence();
        replies.holdNext(1);

        Optional<Grant> outcome = outcome(() -> store.renew(key, "o", LEASE.plusSeconds(5))
                .orElseThrow(() -> new AssertionError("the renewal says the owner lost the key")));

        replies.awaitAnswersHeld(1);
        outcome.ifPresent(grant -> assertThat(grant.fence()).isEqualTo(fence));
        assertStillHeldBy("o", fence);
        assertThat(store.renew(key, "o", LEASE.plusSeconds(5)))
                .map(Grant::fence)
                .contains(fence);
    }

    @Test
    void whenLearningTheOutcomeIsUnansweredTooTheNewLeaseIsKept() {
        long fence = granted(store.tryAcquire(key, "o", LEASE)).fence();
        replies.holdNext(2); // the re-acquire's transaction and the one that would settle it

        assertThatThrownBy(() -> store.tryAcquire(key, "o", LEASE)).isInstanceOf(LeaseStoreException.class);

        replies.awaitAnswersHeld(1);
        assertStillHeldBy("o", fence);
        replies.releaseAll();
        assertThat(store.renew(key, "o", LEASE)).map(Grant::fence).contains(fence);
        assertStillHeldBy("o", fence);
    }

    @Test
    void aReacquireThatReachesEtcdOnlyAfterTheStoreGaveUpAndTheOwnerReleasedBindsNothing() throws Exception {
        String owner = "o-" + UUID.randomUUID();
        long fence = granted(store.tryAcquire(key, owner, LEASE)).fence();
        long lease = etcdLease();
        replies.holdNextRequests(1); // the re-acquire's transaction is not sent until released

        // The key is the owner's on the lease the re-acquire named, so settling finds it granted.
        Optional<Grant> outcome = outcome(() -> granted(store.tryAcquire(key, owner, LEASE)));
        outcome.ifPresent(grant -> assertThat(grant.fence()).isEqualTo(fence));
        assertThat(etcdLease()).isEqualTo(lease);
        assertThat(store.release(key, owner)).isTrue();

        replies.releaseAll(); // sent now, after the owner released the key: it must bind nothing
        await().during(Duration.ofSeconds(1))
                .atMost(Duration.ofSeconds(3))
                .pollInterval(Duration.ofMillis(20))
                .untilAsserted(() -> assertThat(other.inspect(key)).isEmpty());
        // The settle marker stays on that lease, and the lease is retired: the next grant is bound
        // to a new one.
        ByteSequence settled =
                ByteSequence.from("leasehold/settled/" + Long.toHexString(lease), StandardCharsets.UTF_8);
        assertThat(plain.getKVClient().get(settled).get(5, TimeUnit.SECONDS).getKvs())
                .singleElement()
                .satisfies(marker -> assertThat(marker.getLease()).isEqualTo(lease));
        assertThat(store.tryAcquire(key, owner, LEASE)).isInstanceOf(AcquireResult.Granted.class);
        assertThat(etcdLease()).isNotEqualTo(lease);
    }

    @Test
    void aGrantLearnedBySettlingIsCountedFromItsRequestAndIsStillHeldWhenItArrives() {
        Duration lease = Duration.ofSeconds(4);
        EtcdLeaseStore slow =
                EtcdLeaseStore.builder(client).timeout(Duration.ofSeconds(2)).build();
        replies.holdNext(1); // the acquire is applied; its answer is lost, settling finds it applied
        long sent = System.nanoTime();
        Grant grant = granted(slow.tryAcquire(key, "o", lease));
        long arrived = System.nanoTime();

        // As the lock service counts it: from when it sent the request.
        long deadline = sent + Math.min(grant.remaining().toNanos(), lease.toNanos());
        assertThat(Duration.ofNanos(deadline - arrived))
                .as("time left when the grant arrives, %s after its request", Duration.ofNanos(arrived - sent))
                .isPositive();
        replies.releaseAll();
        assertThat(slow.release(key, "o")).isTrue();
        slow.close();
    }

    @Test
    void aReleaseWhoseAnswerIsLostNeverDeletesTheSameOwnersNextGrant() {
        String owner = "request-" + UUID.randomUUID(); // an explicit owner: the same token each time
        LockKey sibling = LockKey.of("unanswered", "sibling-" + UUID.randomUUID());
        granted(store.tryAcquire(key, owner, LEASE));
        granted(store.tryAcquire(sibling, "s", LEASE));
        replies.holdNext(1); // the release is applied; its answer is lost

        assertThatThrownBy(() -> store.release(key, owner)).isInstanceOf(LeaseStoreException.class);
        long fence = granted(store.tryAcquire(key, owner, LEASE)).fence(); // a new grant
        assertThat(store.renew(sibling, "s", LEASE)).isPresent(); // a renewal sends pending releases

        assertStillHeldBy(owner, fence);
        replies.releaseAll();
        assertThat(store.release(key, owner)).isTrue();
        store.release(sibling, "s");
    }

    private long etcdLease() throws Exception {
        return plain.getKVClient()
                .get(new EtcdKeys("leasehold/").lease(key))
                .get(5, TimeUnit.SECONDS)
                .getKvs()
                .get(0)
                .getLease();
    }

    /** The call's grant, or empty if it failed: the test accepts either, and checks etcd. */
    private static Optional<Grant> outcome(java.util.function.Supplier<Grant> call) {
        try {
            return Optional.of(call.get());
        } catch (LeaseStoreException e) {
            return Optional.empty();
        }
    }

    private static Grant granted(AcquireResult result) {
        assertThat(result).isInstanceOf(AcquireResult.Granted.class);
        return ((AcquireResult.Granted) result).grant();
    }

    /**
     * The key stays the owner's, with its fence, for a while after the call (a revoke the call sent
     * without waiting reaches etcd within it), and another owner is refused.
     */
    private void assertStillHeldBy(String owner, long fence) {
        await().during(Duration.ofSeconds(1))
                .atMost(Duration.ofSeconds(3))
                .pollInterval(Duration.ofMillis(20))
                .untilAsserted(() -> assertThat(other.inspect(key))
                        .map(LeaseInfo::ownerToken)
                        .contains(owner));
        assertThat(other.inspect(key)).map(LeaseInfo::fence).contains(fence);
        assertThat(other.tryAcquire(key, "intruder", LEASE)).isInstanceOf(AcquireResult.Busy.class);
    }

    /**
     * Holds back the answers of the next few KV Txn calls (headers, message and close, in order)
     * until released: etcd applied them, the client does not hear it.
     */
    static final class TxnReplies implements ClientInterceptor {
        private static final String TXN = "etcdserverpb.KV/Txn";

        private final AtomicInteger toHold = new AtomicInteger();
        private final AtomicInteger requestsToHold = new AtomicInteger();
        private final AtomicInteger answersHeld = new AtomicInteger();
        private final List<Held> held = new ArrayList<>(); // guarded by this

        void holdNext(int calls) {
            answersHeld.set(0);
            toHold.set(calls);
        }

        void holdNextRequests(int calls) {
            requestsToHold.set(calls);
        }

        void awaitAnswersHeld(int calls) {
            await().atMost(Duration.ofSeconds(10)).until(() -> answersHeld.get() >= calls);
        }

        void releaseAll() {
            toHold.set(0);
            requestsToHold.set(0);
            List<Held> all;
            synchronized (this) {
                all = List.copyOf(held);
                held.clear();
            }
            all.forEach(Held::release);
        }

        @Override
        public <Q, A> ClientCall<Q, A> interceptCall(MethodDescriptor<Q, A> method, CallOptions options, Channel next) {
            ClientCall<Q, A> call = next.newCall(method, options);
            if (!TXN.equals(method.getFullMethodName())) {
                return call;
            }
            if (requestsToHold.getAndUpdate(n -> Math.max(0, n - 1)) > 0) {
                Held request = new Held();
                synchronized (this) {
                    held.add(request);
                }
                return new ForwardingClientCall.SimpleForwardingClientCall<>(call) {
                    @Override
                    public void sendMessage(Q message) {
                        request.add(() -> super.sendMessage(message));
                    }

                    @Override
                    public void halfClose() {
                        request.add(super::halfClose);
                    }
                };
            }
            if (toHold.getAndUpdate(n -> Math.max(0, n - 1)) == 0) {
                return call;
            }
            Held answer = new Held();
            synchronized (this) {
                held.add(answer);
            }
            return new ForwardingClientCall.SimpleForwardingClientCall<>(call) {
                @Override
                public void start(Listener<A> listener, Metadata headers) {
                    super.start(
                            new Listener<A>() {
                                @Override
                                public void onHeaders(Metadata received) {
                                    answer.add(() -> listener.onHeaders(received));
                                }

                                @Override
                                public void onMessage(A message) {
                                    answer.add(() -> listener.onMessage(message));
                                }

                                @Override
                                public void onClose(Status status, Metadata trailers) {
                                    if (status.isOk()) {
                                        answersHeld.incrementAndGet();
                                    }
                                    answer.add(() -> listener.onClose(status, trailers));
                                }

                                @Override
                                public void onReady() {
                                    listener.onReady();
                                }
                            },
                            headers);
                }
            };
        }

        /** One call's held answer: events queue until released, then pass straight through. */
        private static final class Held {
            private final List<Runnable> events = new ArrayList<>(); // guarded by this
            private boolean released; // guarded by this

            synchronized void add(Runnable event) {
                if (released) {
                    event.run();
                } else {
                    events.add(event);
                }
            }

            synchronized void release() {
                released = true;
                events.forEach(Runnable::run);
                events.clear();
            }
        }
    }
}
