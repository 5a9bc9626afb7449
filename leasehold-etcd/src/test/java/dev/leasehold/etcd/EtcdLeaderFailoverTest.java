package dev.leasehold.etcd;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.leasehold.Lease;
import dev.leasehold.LeaseEvent;
import dev.leasehold.LeaseEventType;
import dev.leasehold.LeaseOptions;
import dev.leasehold.LeaseStoreException;
import dev.leasehold.LockBusyException;
import dev.leasehold.LockKey;
import dev.leasehold.LockService;
import dev.leasehold.testkit.EtcdCluster;
import dev.leasehold.testkit.TestServices;
import io.etcd.jetcd.Client;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Kills etcd members while leases are held, with three lock services (each with its own client, as
 * three processes would have) contending for a few keys on a three-member cluster.
 *
 * <p>Every holder writes to a per-key fenced register while it believes it holds the key; the
 * register checks the belief and the fence in one step, so a holder that still believes it holds
 * after a newer grant was used is a double grant, counted. Fences handed out are collected per key
 * to count repeats. A holder told of a loss must be told within its lease of the last grant or
 * renewal the store confirmed.
 */
@Timeout(value = 240, unit = TimeUnit.SECONDS)
class EtcdLeaderFailoverTest {

    private static final Duration LEASE = Duration.ofSeconds(2);
    private static final Duration SIGNAL_SLACK = Duration.ofMillis(1500);
    private static final int FAILOVERS = 3;
    private static final int GRANTS_BETWEEN_FAILOVERS = 12;

    @Test
    void killingTheLeaderMidHoldNeverGrantsTwiceNorRepeatsAFence() throws Exception {
        try (EtcdCluster cluster = TestServices.etcdCluster(3);
                Contention run = new Contention(cluster, 40)) {
            int heldThroughAKill = 0;
            for (int i = 0; i < FAILOVERS; i++) {
                run.awaitGrants(GRANTS_BETWEEN_FAILOVERS);
                List<Lease> holding = run.awaitHolders();
                int leader = cluster.awaitLeader(Duration.ofSeconds(20));
                cluster.kill(leader); // mid-hold: the leases in `holding` are held right now
                assertThat(cluster.awaitLeader(Duration.ofSeconds(30))).isNotEqualTo(leader);
                cluster.restart(leader);
                run.awaitGrants(5);
                heldThroughAKill += (int) holding.stream()
                        .filter(lease -> !run.lostFences.contains(lease.fence()))
                        .count();
            }
            run.stop();
            run.report("leader killed", FAILOVERS, heldThroughAKill);
            run.assertInvariants();
            assertThat(run.grants.get()).isGreaterThan(FAILOVERS * GRANTS_BETWEEN_FAILOVERS);
        }
    }

    @Test
    void losingQuorumMidHoldTellsEveryHolderWithinItsLeaseAndGrantsResumeAfter() throws Exception {
        try (EtcdCluster cluster = TestServices.etcdCluster(3);
                Contention run = new Contention(cluster, 80)) {
            run.awaitGrants(6);
            // A holder that keeps its lease until it is told otherwise, besides the workers.
            Lease pinned = run.services.get(0).acquire(LockKey.of(run.namespace, "pinned"), run.options);
            List<Lease> holding = new ArrayList<>(run.awaitHolders());
            holding.add(pinned);
            int leader = cluster.awaitLeader(Duration.ofSeconds(20));
            int follower = (leader + 1) % cluster.size();
            cluster.kill(leader);
            cluster.kill(follower); // no quorum: nothing can be granted or renewed
            // Every lease held at the outage ends: its holder is told it is lost, unless it finished
            // its work and released first (that release fails, and etcd expires the key later).
            await().atMost(LEASE.plus(SIGNAL_SLACK).multipliedBy(2)).until(() -> holding.stream()
                    .allMatch(lease ->
                            run.lostFences.contains(lease.fence()) || run.releasedFences.contains(lease.fence())));
            int lostInOutage = (int) holding.stream()
                    .filter(lease -> run.lostFences.contains(lease.fence()))
                    .count();
            cluster.restart(leader);
            cluster.restart(follower);
            cluster.awaitLeader(Duration.ofSeconds(30));
            run.awaitGrants(6);
            run.stop();
            run.report("quorum lost", 1, 0);
            run.assertInvariants();
            assertThat(lostInOutage).as("holders told their lease was lost").isPositive();
            assertThat(pinned.isHeld()).isFalse();
            assertThat(run.lostFences).contains(pinned.fence());
            pinned.close();
        }
    }

    /** Three lock services, two worker threads each, contending for three keys until stopped. */
    private static final class Contention implements AutoCloseable {
        final Map<LockKey, FencedRegister> registers = new ConcurrentHashMap<>();
        final Map<LockKey, Set<Long>> granted = new ConcurrentHashMap<>();
        final Map<String, Long> lastConfirmed = new ConcurrentHashMap<>();
        final List<Long> lostAfterConfirmation = new CopyOnWriteArrayList<>();
        final Set<Long> lostFences = ConcurrentHashMap.newKeySet();
        final Set<Long> releasedFences = ConcurrentHashMap.newKeySet();
        final Set<Lease> current = ConcurrentHashMap.newKeySet();
        final AtomicInteger repeatedFences = new AtomicInteger();
        final AtomicInteger grants = new AtomicInteger();
        final AtomicInteger renewals = new AtomicInteger();
        final AtomicInteger busy = new AtomicInteger();
        final AtomicInteger storeErrors = new AtomicInteger();
        final List<Client> clients = new ArrayList<>();
        final List<LockService> services = new ArrayList<>();
        final ExecutorService workers = Executors.newFixedThreadPool(6);
        final List<Future<?>> running = new ArrayList<>();
        final AtomicBoolean stopped = new AtomicBoolean();

        private final int maxSteps;
        final String namespace = "failover-" + UUID.randomUUID().toString().substring(0, 8);
        final LeaseOptions options = LeaseOptions.builder()
                .leaseFor(LEASE)
                .waitFor(Duration.ofSeconds(5))
                .renewal(true)
                .build();

        Contention(EtcdCluster cluster, int maxSteps) {
            this.maxSteps = maxSteps;
            List<LockKey> keys =
                    List.of(LockKey.of(namespace, "A"), LockKey.of(namespace, "B"), LockKey.of(namespace, "C"));
            keys.forEach(k -> registers.put(k, new FencedRegister()));
            for (int p = 0; p < 3; p++) {
                Client client = Client.builder()
                        .endpoints(cluster.endpoints().toArray(String[]::new))
                        .build();
                clients.add(client);
                EtcdLeaseStore store = EtcdLeaseStore.builder(client)
                        .timeout(Duration.ofSeconds(1))
                        .build();
                LockService service =
                        LockService.builder(store).listener(this::record).build();
                services.add(service);
                for (int t = 0; t < 2; t++) {
                    running.add(workers.submit(() -> work(service, keys, options)));
                }
            }
        }

        void awaitGrants(int more) {
            int before = grants.get();
            await().atMost(Duration.ofSeconds(60)).until(() -> grants.get() >= before + more);
        }

        List<Lease> awaitHolders() {
            await().atMost(Duration.ofSeconds(30)).until(() -> !current.isEmpty());
            return List.copyOf(current);
        }

        void stop() throws Exception {
            stopped.set(true);
            for (Future<?> f : running) {
                f.get(60, TimeUnit.SECONDS);
            }
        }

        private void work(LockService service, List<LockKey> keys, LeaseOptions options) {
            ThreadLocalRandom random = ThreadLocalRandom.current();
            while (!stopped.get()) {
                LockKey key = keys.get(random.nextInt(keys.size()));
                try (Lease lease = service.acquire(key, options)) {
                    current.add(lease);
                    try {
                        FencedRegister register = registers.get(key);
                        // Some holds end quickly, others outlive several renewals.
                        int steps = random.nextInt(3, maxSteps);
                        for (int step = 0; step < steps && lease.isHeld(); step++) {
                            register.write(lease);
                            Thread.sleep(random.nextInt(20, 60)); // the work done under the lease
                        }
                    } finally {
                        current.remove(lease);
                    }
                } catch (LockBusyException e) {
                    busy.incrementAndGet();
                } catch (LeaseStoreException e) {
                    storeErrors.incrementAndGet(); // etcd unreachable or electing: try again
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    return;
                }
            }
        }

        private void record(LeaseEvent event) {
            String grant = event.key() + "#" + event.fence();
            long now = System.nanoTime();
            if (event.type() == LeaseEventType.ACQUIRED) {
                grants.incrementAndGet();
                if (!granted.computeIfAbsent(event.key(), k -> ConcurrentHashMap.newKeySet())
                        .add(event.fence())) {
                    repeatedFences.incrementAndGet();
                }
                lastConfirmed.put(grant, now);
            } else if (event.type() == LeaseEventType.RENEWED) {
                renewals.incrementAndGet();
                lastConfirmed.put(grant, now);
            } else if (event.type() == LeaseEventType.LOST) {
                Long confirmed = lastConfirmed.get(grant);
                if (confirmed != null) {
                    lostAfterConfirmation.add(now - confirmed);
                }
                lostFences.add(event.fence());
            } else if (event.type() == LeaseEventType.RELEASED) {
                releasedFences.add(event.fence());
            }
        }

        void report(String fault, int faults, int heldThroughAFault) {
            System.out.printf(
                    "[etcd %s] faults=%d grants=%d writes=%d renewals=%d busy=%d storeErrors=%d lost=%d"
                            + " heldThroughAFault=%d repeatedFences=%d doubleGrants=%d maxLostAfterConfirmationMs=%d%n",
                    fault,
                    faults,
                    grants.get(),
                    registers.values().stream().mapToInt(r -> r.writes).sum(),
                    renewals.get(),
                    busy.get(),
                    storeErrors.get(),
                    lostFences.size(),
                    heldThroughAFault,
                    repeatedFences.get(),
                    doubleGrants(),
                    lostAfterConfirmation.stream()
                                    .mapToLong(Long::longValue)
                                    .max()
                                    .orElse(0)
                            / 1_000_000);
        }

        int doubleGrants() {
            return registers.values().stream().mapToInt(r -> r.doubleGrants).sum();
        }

        void assertInvariants() {
            assertThat(doubleGrants())
                    .as("holders that believed they held after a newer grant was used")
                    .isZero();
            assertThat(repeatedFences.get())
                    .as("fences handed out twice for one key")
                    .isZero();
            assertThat(lostAfterConfirmation)
                    .as("time from the last confirmed grant or renewal to the lost signal")
                    .allSatisfy(
                            nanos -> assertThat(Duration.ofNanos(nanos)).isLessThanOrEqualTo(LEASE.plus(SIGNAL_SLACK)));
        }

        @Override
        public void close() {
            stopped.set(true);
            workers.shutdownNow();
            services.forEach(LockService::close);
            clients.forEach(Client::close);
        }
    }

    /** One key's shared resource: accepts a write only while the writer believes it holds the key. */
    private static final class FencedRegister {
        private long highest;
        private int writes;
        private int doubleGrants;

        synchronized void write(Lease lease) {
            if (!lease.isHeld()) {
                return; // the holder knows it lost the key and stops
            }
            if (lease.fence() < highest) {
                doubleGrants++; // a newer grant was used while this holder still believed it held
            }
            highest = Math.max(highest, lease.fence());
            writes++;
        }
    }
}
