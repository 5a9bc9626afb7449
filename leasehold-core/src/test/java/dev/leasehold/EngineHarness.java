package dev.leasehold;

import dev.leasehold.spi.AcquireResult;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Callable;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.function.Consumer;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Timeout;

/**
 * What the deterministic engine tests share: fake time, a scripted store, services over both, an
 * event log, and threads to wait on. Every wait on another thread is bounded (5 s of real time),
 * so a stalled engine fails a test instead of hanging it.
 */
@Timeout(value = 30, unit = TimeUnit.SECONDS, threadMode = Timeout.ThreadMode.SEPARATE_THREAD)
abstract class EngineHarness {

    final FakeTime time = new FakeTime();
    final List<LeaseEvent> events = new CopyOnWriteArrayList<>();
    private final List<LockService> services = new ArrayList<>();
    private final List<ScriptedStore> stores = new ArrayList<>();
    private final ExecutorService threads = Executors.newCachedThreadPool(r -> {
        Thread thread = new Thread(r, "test-caller");
        thread.setDaemon(true);
        return thread;
    });

    static final LockKey KEY = LockKey.of("t", "k1");

    ScriptedStore store(boolean notifications) {
        ScriptedStore store = new ScriptedStore(time, notifications);
        stores.add(store);
        return store;
    }

    /** A service (a process) over the store, on fake time, logging its events. */
    LockService service(ScriptedStore store, Consumer<LockService.Builder> customizer) {
        LockService.Builder builder = LockService.builder(store)
                .ticker(time)
                .scheduler(time.scheduler())
                .listener(events::add);
        customizer.accept(builder);
        LockService service = builder.build();
        services.add(service);
        return service;
    }

    LockService service(ScriptedStore store) {
        return service(store, b -> {});
    }

    @AfterEach
    void closeAll() {
        threads.shutdownNow();
        services.forEach(LockService::close);
        stores.forEach(ScriptedStore::close);
    }

    static LeaseOptions lease(Duration leaseFor, boolean renewal) {
        return LeaseOptions.builder().leaseFor(leaseFor).renewal(renewal).build();
    }

    static LeaseOptions waiting(Duration leaseFor, Duration waitFor) {
        return LeaseOptions.builder()
                .leaseFor(leaseFor)
                .renewal(false)
                .waitFor(waitFor)
                .build();
    }

    <T> Future<T> async(Callable<T> work) {
        return threads.submit(work);
    }

    /** The result of work on another thread; fails the test after 5 s. */
    static <T> T await(Future<T> future) throws Exception {
        try {
            return future.get(FakeTime.PATIENCE.toMillis(), TimeUnit.MILLISECONDS);
        } catch (ExecutionException e) {
            if (e.getCause() instanceof Exception cause) {
                throw cause;
            }
            throw e;
        } catch (TimeoutException e) {
            throw new AssertionError("the engine did not answer in 5 s", e);
        }
    }

    /** Takes the key in the store as another process would, behind every service's back. */
    static long holdElsewhere(ScriptedStore store, String owner, Duration leaseFor) {
        AcquireResult result = store.backend.tryAcquire(KEY, owner, leaseFor);
        if (!(result instanceof AcquireResult.Granted granted)) {
            throw new AssertionError("expected a grant, got " + result);
        }
        return granted.grant().fence();
    }

    /** Waits until the key is free in the store (5 s at most). */
    static void awaitFree(ScriptedStore store, LockKey key) {
        org.awaitility.Awaitility.await(key + " free in the store")
                .atMost(FakeTime.PATIENCE)
                .pollInterval(Duration.ofMillis(1))
                .until(() -> store.backend.inspect(key).isEmpty());
    }

    long count(LeaseEventType type) {
        return events.stream().filter(e -> e.type() == type).count();
    }

    void awaitEvents(LeaseEventType type, int n) {
        org.awaitility.Awaitility.await("" + n + " " + type + " events")
                .atMost(FakeTime.PATIENCE)
                .pollInterval(Duration.ofMillis(1))
                .until(() -> count(type) >= n);
    }
}
