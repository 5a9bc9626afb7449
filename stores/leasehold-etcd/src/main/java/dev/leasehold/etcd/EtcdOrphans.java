package dev.leasehold.etcd;

import static dev.leasehold.etcd.EtcdKeys.bytes;

import dev.leasehold.LockKey;
import io.etcd.jetcd.ByteSequence;
import io.etcd.jetcd.KV;
import io.etcd.jetcd.KeyValue;
import io.etcd.jetcd.op.Cmp;
import io.etcd.jetcd.op.CmpTarget;
import io.etcd.jetcd.op.Op;
import io.etcd.jetcd.options.DeleteOption;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The keys of one {@link EtcdLeaseStore} whose release failed (no answer, or etcd unreachable). A
 * released key sits on an etcd lease it shares with other keys, whose renewals keep that lease
 * alive; a key whose holder let go but whose delete never reached etcd would stay with them. So
 * the store deletes each such key again whenever it renews or grants, until etcd answers.
 *
 * <p>An owner may take the same key again with the same token (an explicit owner, such as a
 * retried request): its earlier release is then forgotten before the new grant is sent ({@link
 * #forget}), and a delete is only ever sent for the key as read while the release was still
 * pending, conditioned on that read's modification revision, so no delete removes a later grant,
 * however late it reaches etcd. Thread-safe.
 */
final class EtcdOrphans {

    private static final Logger log = LoggerFactory.getLogger(EtcdOrphans.class);

    private final KV kv;
    private final EtcdKeys keys;
    private final Duration timeout;
    private final ConcurrentHashMap<String, Orphan> orphans = new ConcurrentHashMap<>();

    private record Orphan(LockKey key, String owner, AtomicBoolean inFlight) {}

    EtcdOrphans(KV kv, EtcdKeys keys, Duration timeout) {
        this.kv = kv;
        this.keys = keys;
        this.timeout = timeout;
    }

    /**
     * The owner let go of the key, and etcd may not know: delete it at the next renewal. A release
     * that fails again replaces the entry, so the answer of a delete sent for the earlier one does
     * not end it.
     */
    void add(LockKey key, String owner) {
        orphans.put(id(key, owner), new Orphan(key, owner, new AtomicBoolean()));
    }

    /** The owner takes the key again: its earlier release is no longer to be sent. */
    void forget(LockKey key, String owner) {
        if (!orphans.isEmpty()) {
            orphans.remove(id(key, owner));
        }
    }

    /** Releases still to be sent again. */
    int pending() {
        return orphans.size();
    }

    /**
     * For every orphan with nothing in flight, without waiting: reads the key; if it is still the
     * owner's and the orphan still pending, deletes it IF its modification revision is still the
     * one read. An orphan is dropped once etcd answered; a failure or a timeout leaves it for the
     * next call.
     */
    void retry() {
        if (orphans.isEmpty()) {
            return;
        }
        orphans.forEach((id, orphan) -> {
            if (!orphan.inFlight().compareAndSet(false, true)) {
                return;
            }
            ByteSequence leaseKey = keys.lease(orphan.key());
            kv.get(leaseKey)
                    .orTimeout(timeout.toNanos(), TimeUnit.NANOSECONDS)
                    .thenCompose(read -> {
                        KeyValue current =
                                read.getKvs().isEmpty() ? null : read.getKvs().get(0);
                        if (current == null
                                || !current.getValue()
                                        .toString(StandardCharsets.UTF_8)
                                        .equals(orphan.owner())
                                || orphans.get(id) != orphan) {
                            // gone, another owner's, or taken again by this owner after the read
                            return CompletableFuture.completedFuture(false);
                        }
                        return kv.txn()
                                .If(
                                        new Cmp(leaseKey, Cmp.Op.EQUAL, CmpTarget.value(bytes(orphan.owner()))),
                                        new Cmp(
                                                leaseKey,
                                                Cmp.Op.EQUAL,
                                                CmpTarget.modRevision(current.getModRevision())))
                                .Then(Op.delete(leaseKey, DeleteOption.DEFAULT))
                                .commit()
                                .orTimeout(timeout.toNanos(), TimeUnit.NANOSECONDS)
                                .thenApply(txn -> txn.isSucceeded());
                    })
                    .whenComplete((deleted, failure) -> {
                        if (failure != null) {
                            orphan.inFlight().set(false);
                            return;
                        }
                        orphans.remove(id, orphan);
                        if (deleted) {
                            log.info("released {}, whose release had failed, at a later call", orphan.key());
                        }
                    });
        });
    }

    void clear() {
        orphans.clear();
    }

    private static String id(LockKey key, String owner) {
        return key.render() + ' ' + owner;
    }
}
