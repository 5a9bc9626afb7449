package dev.leasehold.etcd;

import dev.leasehold.LeaseStoreException;
import dev.leasehold.LockKey;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/** Waits for jetcd's answers, each at most the store's timeout. Thread-safe. */
final class EtcdCalls {

    private final Duration timeout;

    EtcdCalls(Duration timeout) {
        this.timeout = timeout;
    }

    /** As {@link #call(String, String, CompletableFuture)}, naming the key. */
    <T> T call(String operation, LockKey key, CompletableFuture<T> future) {
        return call(operation, key.render(), future);
    }

    /**
     * The answer of {@code future}. A timeout or an interrupt cancels it (the request may still
     * reach etcd); an interrupt leaves the thread interrupted.
     *
     * @throws LeaseStoreException naming {@code what} on a failure, a timeout or an interrupt
     */
    <T> T call(String operation, String what, CompletableFuture<T> future) {
        return call(operation, what, future, deadline());
    }

    /** The deadline, in {@link System#nanoTime()}, of a call that starts now. */
    long deadline() {
        return System.nanoTime() + timeout.toNanos();
    }

    /**
     * As {@link #call(String, String, CompletableFuture)}, waiting until {@code deadlineNanos} at
     * most: calls sent together share one deadline, so a batch waits one timeout, not one each.
     */
    <T> T call(String operation, String what, CompletableFuture<T> future, long deadlineNanos) {
        try {
            return future.get(Math.max(0, deadlineNanos - System.nanoTime()), TimeUnit.NANOSECONDS);
        } catch (InterruptedException e) {
            future.cancel(true);
            Thread.currentThread().interrupt();
            throw new LeaseStoreException(operation, what, e);
        } catch (TimeoutException e) {
            future.cancel(true);
            throw new LeaseStoreException(
                    operation, what, new TimeoutException("etcd did not answer within " + timeout));
        } catch (ExecutionException e) {
            throw new LeaseStoreException(operation, what, e.getCause());
        }
    }
}
