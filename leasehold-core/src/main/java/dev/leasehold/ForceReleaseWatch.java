package dev.leasehold;

import dev.leasehold.spi.LeaseStore;
import dev.leasehold.spi.ReleaseNotice;
import dev.leasehold.spi.ReleaseSubscription;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.BooleanSupplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The watch of force-releases made anywhere: subscribed once, before the first grant, on stores
 * that announce releases; a notice ends the local grant with the removed fence, and only it. A
 * failed subscription is tried again at the next grant. Thread-safe.
 */
final class ForceReleaseWatch {

    private static final Logger log = LoggerFactory.getLogger(ForceReleaseWatch.class);

    private final LeaseStore store;
    private final EngineThreads threads;
    private final HolderSlots slots;
    private final BooleanSupplier closed;
    private final AtomicReference<StoreCall<ReleaseSubscription>> watch = new AtomicReference<>();
    private final AtomicReference<ReleaseSubscription> subscription = new AtomicReference<>();

    ForceReleaseWatch(LeaseStore store, EngineThreads threads, HolderSlots slots, BooleanSupplier closed) {
        this.store = store;
        this.threads = threads;
        this.slots = slots;
        this.closed = closed;
    }

    /**
     * Subscribes to the store's force-release notices unless that is done or under way, waiting
     * for the subscription until the deadline. If the caller stops waiting, the call goes on and
     * the watch is active once it returns.
     */
    void await(long deadline) throws InterruptedException {
        if (!store.supportsReleaseNotifications() || watch.get() != null) {
            return;
        }
        StoreCall<ReleaseSubscription> call = new StoreCall<>(
                () -> store.subscribeForceReleases(notice -> threads.handOff(() -> notice(notice))), this::ended);
        if (!watch.compareAndSet(null, call)) {
            return; // another caller subscribes
        }
        call.startOn(threads.calls());
        if (call.await(threads.parking(), deadline)) {
            ended(call);
        }
    }

    private void ended(StoreCall<ReleaseSubscription> call) {
        if (call.value() != null) {
            subscription.set(call.value());
            if (closed.getAsBoolean()) {
                LocalWaitQueues.closeQuietly(call.value(), "force-release notices");
            }
            return;
        }
        Throwable failure = call.failure();
        if (failure instanceof UnsupportedOperationException) {
            log.info("{} announces no force-releases; holders learn of them at their next renewal", store.name());
            return;
        }
        log.warn("could not subscribe to force-release notices of {}; will try again", store.name(), failure);
        watch.compareAndSet(call, null);
    }

    /** On the notice thread: a force-release anywhere ends the local grant with that fence, and only it. */
    private void notice(ReleaseNotice notice) {
        if (notice.fence() == 0) {
            return;
        }
        for (HeldLease lease : slots.leases()) {
            if (lease.fence == notice.fence() && lease.key.render().equals(notice.key())) {
                lease.markLost("force-released by an operator (announced by the store)");
            }
        }
    }

    /** Closes the subscription, if there is one. */
    void close() {
        ReleaseSubscription active = subscription.getAndSet(null);
        if (active != null) {
            LocalWaitQueues.closeQuietly(active, "force-release notices");
        }
    }
}
