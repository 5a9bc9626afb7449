package dev.leasehold;

import dev.leasehold.memory.InMemoryLeaseStore;
import dev.leasehold.spi.AcquireRequest;
import dev.leasehold.spi.AcquireResult;
import dev.leasehold.spi.Grant;
import dev.leasehold.spi.LeaseStore;
import dev.leasehold.spi.ReleaseNotice;
import dev.leasehold.spi.ReleaseSubscription;
import java.time.Clock;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedDeque;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.Consumer;
import java.util.function.Predicate;
import java.util.function.Supplier;

/**
 * A {@link LeaseStore} for deterministic engine tests: every call is recorded, and each can be
 * scripted to pass, fail, hang until a gate opens, or be applied and then report a failure (the
 * ambiguous outcome of a timeout). The leases themselves live in an {@link InMemoryLeaseStore} on
 * the test's {@link FakeTime}, so expiry follows fake time.
 *
 * <p>Release notifications are delivered the way a network client delivers them: on one I/O thread
 * of the store, in order, and {@link #subscribe} returns only after the I/O thread has processed
 * it, so a callback that blocks the I/O thread stalls every later subscription.
 */
final class ScriptedStore implements LeaseStore {

    enum Op {
        ACQUIRE,
        RENEW,
        RELEASE,
        INSPECT,
        FORCE_RELEASE,
        SUBSCRIBE,
        SUBSCRIBE_FORCE,
        LEAVE_QUEUE
    }

    /** One call the engine made. */
    record Call(Op op, LockKey key, String owner, String thread) {}

    /** What one scripted call does around the real operation. */
    @FunctionalInterface
    interface Step {
        <T> T apply(Call call, Supplier<T> real);
    }

    /** A hang that the test ends: the call waits in the store until {@link #open} or {@link #fail}. */
    static final class Gate {
        private final CountDownLatch entered = new CountDownLatch(1);
        private final CountDownLatch opened = new CountDownLatch(1);
        private volatile RuntimeException failure;

        /** Waits until a call is hanging on this gate. */
        void awaitEntered() {
            await(entered, "a call to reach the gate");
        }

        /** Lets the hanging call proceed with the real operation. */
        void open() {
            opened.countDown();
        }

        /** Lets the hanging call fail with a store exception. */
        void fail() {
            failure = new LeaseStoreException("scripted", "(gate)", new TimeoutException("scripted timeout"));
            opened.countDown();
        }

        private static void await(CountDownLatch latch, String what) {
            try {
                if (!latch.await(FakeTime.PATIENCE.toMillis(), TimeUnit.MILLISECONDS)) {
                    throw new AssertionError("waited 5 s for " + what);
                }
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new AssertionError("interrupted", e);
            }
        }

        boolean isEntered() {
            return entered.getCount() == 0;
        }

        <T> T pass(Supplier<T> real) {
            entered.countDown();
            try {
                opened.await();
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new LeaseStoreException("scripted", "(gate)", e);
            }
            if (failure != null) {
                throw failure;
            }
            return real.get();
        }
    }

    final FakeTime time;
    /** The leases; reach them directly to act behind the engine's back (no notices are sent). */
    final InMemoryLeaseStore backend;

    private final boolean notifications;
    private final ReentrantLock lock = new ReentrantLock();
    private final Condition changed = lock.newCondition();
    private final List<Call> history = new ArrayList<>(); // guarded by lock
    private int answered; // guarded by lock: calls of the history that have returned
    private final Map<String, ConcurrentLinkedDeque<Step>> scripts = new ConcurrentHashMap<>();
    private final Map<Op, Step> forever = new ConcurrentHashMap<>();
    private final Map<String, CopyOnWriteArrayList<Consumer<ReleaseNotice>>> subscribers = new ConcurrentHashMap<>();
    private final CopyOnWriteArrayList<Consumer<ReleaseNotice>> forceSubscribers = new CopyOnWriteArrayList<>();
    private final ExecutorService io = Executors.newSingleThreadExecutor(r -> {
        Thread thread = new Thread(r, "scripted-store-io");
        thread.setDaemon(true);
        return thread;
    });

    ScriptedStore(FakeTime time, boolean notifications) {
        this.time = time;
        this.notifications = notifications;
        this.backend = new InMemoryLeaseStore(time, Clock.systemUTC());
    }

    // ------------------------------------------------------------------ steps

    static Step pass() {
        return new Step() {
            @Override
            public <T> T apply(Call call, Supplier<T> real) {
                return real.get();
            }
        };
    }

    static Step fail() {
        return new Step() {
            @Override
            public <T> T apply(Call call, Supplier<T> real) {
                throw new LeaseStoreException(
                        call.op().name().toLowerCase(), render(call), new RuntimeException("scripted failure"));
            }
        };
    }

    /** Applies the operation, then reports a failure, as a reply lost to a timeout would. */
    static Step applyThenFail() {
        return new Step() {
            @Override
            public <T> T apply(Call call, Supplier<T> real) {
                real.get();
                throw new LeaseStoreException(
                        call.op().name().toLowerCase(), render(call), new TimeoutException("reply lost"));
            }
        };
    }

    static Step error(Error error) {
        return new Step() {
            @Override
            public <T> T apply(Call call, Supplier<T> real) {
                throw error;
            }
        };
    }

    static Step hang(Gate gate) {
        return new Step() {
            @Override
            public <T> T apply(Call call, Supplier<T> real) {
                return gate.pass(real);
            }
        };
    }

    /** Applies the operation, then hangs on the gate before it returns. */
    static Step applyThenHang(Gate gate) {
        return new Step() {
            @Override
            public <T> T apply(Call call, Supplier<T> real) {
                T value = real.get();
                return gate.pass(() -> value);
            }
        };
    }

    /** Hangs on the gate, then applies the operation and reports a failure: a reply lost after a long wait. */
    static Step hangThenApplyThenFail(Gate gate) {
        return new Step() {
            @Override
            public <T> T apply(Call call, Supplier<T> real) {
                return gate.pass(() -> {
                    real.get();
                    throw new LeaseStoreException(
                            call.op().name().toLowerCase(), render(call), new TimeoutException("reply lost"));
                });
            }
        };
    }

    /** Runs {@code before} in the store, then the real operation. */
    static Step before(Runnable before) {
        return new Step() {
            @Override
            public <T> T apply(Call call, Supplier<T> real) {
                before.run();
                return real.get();
            }
        };
    }

    private static String render(Call call) {
        return call.key() == null ? "(all)" : call.key().render();
    }

    /** The next calls of {@code op} on any key run these steps, in order; later ones pass. */
    void script(Op op, Step... steps) {
        script(op, null, steps);
    }

    /** The next calls of {@code op} on {@code key} run these steps, in order. */
    void script(Op op, LockKey key, Step... steps) {
        scripts.computeIfAbsent(slot(op, key), k -> new ConcurrentLinkedDeque<>())
                .addAll(List.of(steps));
    }

    /** Every later call of {@code op} runs {@code step}. */
    void always(Op op, Step step) {
        forever.put(op, step);
    }

    private static String slot(Op op, LockKey key) {
        return op + "|" + (key == null ? "*" : key.render());
    }

    private <T> T run(Op op, LockKey key, String owner, Supplier<T> real) {
        Call call = new Call(op, key, owner, Thread.currentThread().getName());
        lock.lock();
        try {
            history.add(call);
            changed.signalAll();
        } finally {
            lock.unlock();
        }
        Step step = null;
        if (key != null) {
            ConcurrentLinkedDeque<Step> forKey = scripts.get(slot(op, key));
            step = forKey == null ? null : forKey.poll();
        }
        if (step == null) {
            ConcurrentLinkedDeque<Step> any = scripts.get(slot(op, null));
            step = any == null ? null : any.poll();
        }
        if (step == null) {
            step = forever.get(op);
        }
        try {
            return (step == null ? pass() : step).apply(call, real);
        } finally {
            lock.lock();
            try {
                answered++;
                changed.signalAll();
            } finally {
                lock.unlock();
            }
        }
    }

    /** Whether every call made so far has returned (none is in flight, or hung). */
    boolean idle() {
        lock.lock();
        try {
            return answered == history.size();
        } finally {
            lock.unlock();
        }
    }

    // ------------------------------------------------------------------ observing

    /** The calls so far. */
    List<Call> calls() {
        lock.lock();
        try {
            return List.copyOf(history);
        } finally {
            lock.unlock();
        }
    }

    long count(Op op, LockKey key) {
        return calls().stream()
                .filter(c -> c.op() == op && (key == null || key.equals(c.key())))
                .count();
    }

    /** Waits until at least {@code n} calls match (5 s at most, then the test fails). */
    List<Call> awaitCalls(Predicate<Call> match, int n, String what) {
        long deadline = System.nanoTime() + FakeTime.PATIENCE.toNanos();
        lock.lock();
        try {
            while (true) {
                List<Call> found = history.stream().filter(match).toList();
                if (found.size() >= n) {
                    return found;
                }
                long left = deadline - System.nanoTime();
                if (left <= 0) {
                    throw new AssertionError("expected " + n + " " + what + " call(s) in 5 s; calls: " + history);
                }
                changed.awaitNanos(left);
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new AssertionError("interrupted", e);
        } finally {
            lock.unlock();
        }
    }

    Call awaitCall(Op op, LockKey key, int n) {
        List<Call> found = awaitCalls(c -> c.op() == op && (key == null || key.equals(c.key())), n, op + " " + key);
        return found.get(n - 1);
    }

    /** Delivers a notice to the key's subscribers (and, if forced, the store-wide ones) on the I/O thread. */
    void publish(ReleaseNotice notice) {
        io.execute(() -> {
            CopyOnWriteArrayList<Consumer<ReleaseNotice>> list = subscribers.get(notice.key());
            if (list != null) {
                list.forEach(s -> s.accept(notice));
            }
            if (notice.forced()) {
                forceSubscribers.forEach(s -> s.accept(notice));
            }
        });
    }

    /** Waits until the I/O thread has delivered everything published so far (5 s at most). */
    void awaitIoIdle() {
        try {
            io.submit(() -> {}).get(FakeTime.PATIENCE.toMillis(), TimeUnit.MILLISECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new AssertionError("interrupted", e);
        } catch (ExecutionException | TimeoutException e) {
            throw new AssertionError("the store's I/O thread is stuck (a callback blocked it)", e);
        }
    }

    int subscriberCount(LockKey key) {
        CopyOnWriteArrayList<Consumer<ReleaseNotice>> list = subscribers.get(key.render());
        return list == null ? 0 : list.size();
    }

    /** How many store-wide force-release subscriptions are open. */
    int forceSubscriberCount() {
        return forceSubscribers.size();
    }

    /** The acquire requests the engine made, in order. */
    List<AcquireRequest> requests() {
        return List.copyOf(requests);
    }

    /** From now on {@link #leaveQueue} tells the engine it does not block (as an asynchronous client's). */
    void leaveWithoutBlocking() {
        leaveWithoutBlocking = true;
    }

    private final List<AcquireRequest> requests = new CopyOnWriteArrayList<>();
    private volatile boolean leaveWithoutBlocking;

    // ------------------------------------------------------------------ the SPI

    @Override
    public AcquireResult tryAcquire(LockKey key, String owner, Duration leaseFor) {
        return run(Op.ACQUIRE, key, owner, () -> backend.tryAcquire(key, owner, leaseFor));
    }

    @Override
    public AcquireResult tryAcquire(AcquireRequest request) {
        requests.add(request);
        return tryAcquire(request.key(), request.owner(), request.leaseFor());
    }

    @Override
    public boolean acquiresAsynchronously() {
        return asyncMode != AsyncMode.NONE;
    }

    @Override
    public java.util.concurrent.CompletionStage<AcquireResult> tryAcquireAsync(AcquireRequest request) {
        requests.add(request);
        return switch (asyncMode) {
            case NONE -> throw new UnsupportedOperationException("no asynchronous acquire");
            case REFUSE -> throw new IllegalArgumentException("scripted refusal before sending");
            case ANSWER ->
                java.util.concurrent.CompletableFuture.supplyAsync(
                        () -> tryAcquire(request.key(), request.owner(), request.leaseFor()), client);
        };
    }

    @Override
    public void leaveQueue(LockKey key, String owner) {
        run(Op.LEAVE_QUEUE, key, owner, () -> null);
    }

    @Override
    public boolean leavesQueueWithoutBlocking() {
        return leaveWithoutBlocking;
    }

    /**
     * From now on, answers {@link #tryAcquireAsync} as an asynchronous client does: the call (with
     * its scripted steps) runs on the store's client thread, {@value #CLIENT_THREAD}; or, if {@code
     * refuseAtOnce}, the call throws before anything is sent.
     */
    void answerAsync(boolean refuseAtOnce) {
        this.asyncMode = refuseAtOnce ? AsyncMode.REFUSE : AsyncMode.ANSWER;
    }

    static final String CLIENT_THREAD = "scripted-store-client";

    private enum AsyncMode {
        NONE,
        ANSWER,
        REFUSE
    }

    private volatile AsyncMode asyncMode = AsyncMode.NONE;
    private final ExecutorService client = Executors.newCachedThreadPool(r -> {
        Thread thread = new Thread(r, CLIENT_THREAD);
        thread.setDaemon(true);
        return thread;
    });

    @Override
    public Optional<Grant> renew(LockKey key, String owner, Duration leaseFor) {
        return run(Op.RENEW, key, owner, () -> backend.renew(key, owner, leaseFor));
    }

    @Override
    public boolean release(LockKey key, String owner) {
        return run(Op.RELEASE, key, owner, () -> {
            Optional<dev.leasehold.LeaseInfo> before = backend.inspect(key);
            boolean released = backend.release(key, owner);
            if (released && notifications) {
                publish(new ReleaseNotice(key.render(), before.orElseThrow().fence(), false));
            }
            return released;
        });
    }

    @Override
    public Optional<dev.leasehold.LeaseInfo> inspect(LockKey key) {
        return run(Op.INSPECT, key, null, () -> backend.inspect(key));
    }

    @Override
    public boolean forceRelease(LockKey key) {
        return run(Op.FORCE_RELEASE, key, null, () -> {
            long fence =
                    backend.inspect(key).map(dev.leasehold.LeaseInfo::fence).orElse(0L);
            boolean removed = backend.forceRelease(key);
            if (notifications) {
                publish(new ReleaseNotice(key.render(), fence, true));
            }
            return removed;
        });
    }

    @Override
    public boolean supportsReleaseNotifications() {
        return notifications;
    }

    @Override
    public ReleaseSubscription subscribe(LockKey key, Consumer<ReleaseNotice> onRelease) {
        if (!notifications) {
            return run(Op.SUBSCRIBE, key, null, () -> {
                throw new UnsupportedOperationException("scripted store without notifications");
            });
        }
        CopyOnWriteArrayList<Consumer<ReleaseNotice>> list =
                subscribers.computeIfAbsent(key.render(), k -> new CopyOnWriteArrayList<>());
        // Registered before the request goes out, as a client does: whatever the I/O thread delivers
        // for the channel from now on reaches it.
        list.add(onRelease);
        try {
            return run(Op.SUBSCRIBE, key, null, () -> {
                ioRoundTrip();
                return () -> list.remove(onRelease);
            });
        } catch (RuntimeException | Error e) {
            list.remove(onRelease);
            throw e;
        }
    }

    @Override
    public ReleaseSubscription subscribeForceReleases(Consumer<ReleaseNotice> onForceRelease) {
        if (!notifications) {
            throw new UnsupportedOperationException("scripted store without notifications");
        }
        forceSubscribers.add(onForceRelease);
        try {
            return run(Op.SUBSCRIBE_FORCE, null, null, () -> {
                ioRoundTrip();
                return () -> forceSubscribers.remove(onForceRelease);
            });
        } catch (RuntimeException | Error e) {
            forceSubscribers.remove(onForceRelease);
            throw e;
        }
    }

    /** The reply to a subscribe is read by the I/O thread after every message before it. */
    private void ioRoundTrip() {
        try {
            io.submit(() -> {}).get();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new LeaseStoreException("subscribe", "(io)", e);
        } catch (ExecutionException e) {
            throw new LeaseStoreException("subscribe", "(io)", e);
        }
    }

    @Override
    public String name() {
        return "scripted";
    }

    @Override
    public void close() {
        io.shutdownNow();
        client.shutdownNow();
    }
}
