package dev.leasehold.testkit;

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
import dev.leasehold.spi.LeaseStore;
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
import java.util.function.Supplier;

/**
 * A contended run for failover tests: three lock services (each on its own store, as three
 * processes would have) with two worker threads each take three keys in turn, for holds of random
 * length, until stopped, while the test breaks the backend.
 *
 * <p>Every holder writes to a per-key fenced register while it believes it holds the key; the
 * register checks the belief and the fence in one step, so a holder that still believes it holds
 * after a newer grant was used is a double grant, counted. Fences handed out are collected per key
 * to count repeats. A holder told of a loss must be told within its lease of the last grant or
 * renewal the store confirmed. Store errors and busy results are counted, never fatal: workers try
 * again.
 */
public final class FailoverRun implements AutoCloseable {

    /** Slack for the lost signal beyond the lease: the engine's timer runs on a loaded machine. */
    public static final Duration SIGNAL_SLACK = Duration.ofMillis(1500);

    private final Map<LockKey, FencedRegister> registers = new ConcurrentHashMap<>();
    private final Map<LockKey, Set<Long>> granted = new ConcurrentHashMap<>();
    private final Map<String, Long> lastConfirmed = new ConcurrentHashMap<>();
    private final List<Long> lostAfterConfirmation = new CopyOnWriteArrayList<>();
    private final Set<Long> lostFences = ConcurrentHashMap.newKeySet();
    private final Set<Long> releasedFences = ConcurrentHashMap.newKeySet();
    private final Set<Lease> current = ConcurrentHashMap.newKeySet();
    private final AtomicInteger repeatedFences = new AtomicInteger();
    private final AtomicInteger grants = new AtomicInteger();
    private final AtomicInteger renewals = new AtomicInteger();
    private final AtomicInteger busy = new AtomicInteger();
    private final AtomicInteger storeErrors = new AtomicInteger();
    private final List<LeaseStore> stores = new ArrayList<>();
    private final List<LockService> services = new ArrayList<>();
    private final ExecutorService workers = Executors.newFixedThreadPool(6);
    private final List<Future<?>> running = new ArrayList<>();
    private final AtomicBoolean stopped = new AtomicBoolean();

    private final int maxSteps;
    private final String namespace = "failover-" + UUID.randomUUID().toString().substring(0, 8);
    private final LeaseOptions options;
    private final Duration lease;

    /**
     * Starts three lock services, each on a store of its own from {@code stores} (as three
     * processes would have), two worker threads each, contending for three keys.
     *
     * @param stores makes one store per service; called three times
     * @param lease the lease of every hold
     * @param maxSteps the longest hold, in steps of 20 to 60 ms of work
     */
    public FailoverRun(Supplier<LeaseStore> stores, Duration lease, int maxSteps) {
        this.maxSteps = maxSteps;
        this.lease = lease;
        this.options = LeaseOptions.builder()
                .leaseFor(lease)
                .waitFor(Duration.ofSeconds(5))
                .renewal(true)
                .build();
        List<LockKey> keys =
                List.of(LockKey.of(namespace, "A"), LockKey.of(namespace, "B"), LockKey.of(namespace, "C"));
        keys.forEach(k -> registers.put(k, new FencedRegister()));
        for (int p = 0; p < 3; p++) {
            LeaseStore store = stores.get();
            this.stores.add(store);
            LockService service =
                    LockService.builder(store).listener(this::record).build();
            services.add(service);
            for (int t = 0; t < 2; t++) {
                running.add(workers.submit(() -> work(service, keys, options)));
            }
        }
    }

    /** The services of the run, in order; each has its own store. */
    public List<LockService> services() {
        return services;
    }

    /** The key namespace of this run, for keys a test takes besides the workers'. */
    public String namespace() {
        return namespace;
    }

    /** The lease options every worker uses. */
    public LeaseOptions options() {
        return options;
    }

    /** How many grants the workers have had. */
    public int grants() {
        return grants.get();
    }

    /** How many acquires failed with a store error (the backend unreachable, failing over, refusing). */
    public int storeErrors() {
        return storeErrors.get();
    }

    /** Whether the holder of this lease was told it was lost. */
    public boolean wasLost(Lease lease) {
        return lostFences.contains(lease.fence());
    }

    /** Whether the holder of this lease released it (successfully or not). */
    public boolean wasReleased(Lease lease) {
        return releasedFences.contains(lease.fence());
    }

    /** Waits until the workers have had {@code more} grants beyond the current count. */
    public void awaitGrants(int more) {
        int before = grants.get();
        await().atMost(Duration.ofSeconds(60)).until(() -> grants.get() >= before + more);
    }

    /** Waits until some worker holds a lease, and returns the leases held at that moment. */
    public List<Lease> awaitHolders() {
        await().atMost(Duration.ofSeconds(30)).until(() -> !current.isEmpty());
        return List.copyOf(current);
    }

    /** Stops the workers and waits for them to finish their holds. */
    public void stop() throws Exception {
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
                storeErrors.incrementAndGet(); // the backend is unreachable or failing over: try again
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

    /** Prints the run's figures on one line, tagged {@code [fault]}, for the test report. */
    public void report(String fault, int faults, int heldThroughAFault) {
        System.out.printf(
                "[%s] faults=%d grants=%d writes=%d renewals=%d busy=%d storeErrors=%d lost=%d"
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
                lostAfterConfirmation.stream().mapToLong(Long::longValue).max().orElse(0) / 1_000_000);
    }

    /** Writes by holders that still believed they held after a newer grant was used. */
    public int doubleGrants() {
        return registers.values().stream().mapToInt(r -> r.doubleGrants).sum();
    }

    /** Fences that were handed out twice for one key. */
    public int repeatedFences() {
        return repeatedFences.get();
    }

    /** No double grant, no repeated fence, every lost signal within the lease (plus slack). */
    public void assertInvariants() {
        assertThat(doubleGrants())
                .as("holders that believed they held after a newer grant was used")
                .isZero();
        assertThat(repeatedFences.get())
                .as("fences handed out twice for one key")
                .isZero();
        assertThat(lostAfterConfirmation)
                .as("time from the last confirmed grant or renewal to the lost signal")
                .allSatisfy(nanos -> assertThat(Duration.ofNanos(nanos)).isLessThanOrEqualTo(lease.plus(SIGNAL_SLACK)));
    }

    /** Stops the workers at once and closes the services and stores. */
    @Override
    public void close() {
        stopped.set(true);
        workers.shutdownNow();
        services.forEach(LockService::close);
        stores.forEach(LeaseStore::close);
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
