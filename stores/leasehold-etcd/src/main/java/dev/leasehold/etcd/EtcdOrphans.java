package dev.leasehold.etcd;

import static dev.leasehold.etcd.EtcdKeys.bytes;

import dev.leasehold.LockKey;
import io.etcd.jetcd.ByteSequence;
import io.etcd.jetcd.KV;
import io.etcd.jetcd.op.Cmp;
import io.etcd.jetcd.op.CmpTarget;
import io.etcd.jetcd.op.Op;
import io.etcd.jetcd.options.DeleteOption;
import java.time.Duration;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The keys of one {@link EtcdLeaseStore} whose release failed (no answer, or etcd unreachable). A
 * released key sits on an etcd lease it shares with other keys, whose renewals keep that lease
 * alive; a key whose holder let go but whose delete never reached etcd would stay with them. So
 * the store sends each such key's owner-checked delete again every time it renews, until etcd
 * answers it. Thread-safe.
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

    /** The owner let go of the key, and etcd may not know: delete it at the next renewal. */
    void add(LockKey key, String owner) {
        orphans.putIfAbsent(key.render() + ' ' + owner, new Orphan(key, owner, new AtomicBoolean()));
    }

    /**
     * Sends the delete of every orphan that has none in flight, without waiting: IF the key is
     * still the owner's THEN delete it, so it never deletes another owner's grant. An orphan is
     * dropped once etcd answered, whatever the answer; a failure or a timeout leaves it for the
     * next renewal.
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
            kv.txn()
                    .If(new Cmp(leaseKey, Cmp.Op.EQUAL, CmpTarget.value(bytes(orphan.owner()))))
                    .Then(Op.delete(leaseKey, DeleteOption.DEFAULT))
                    .commit()
                    .orTimeout(timeout.toNanos(), TimeUnit.NANOSECONDS)
                    .whenComplete((txn, failure) -> {
                        if (failure != null) {
                            orphan.inFlight().set(false);
                            return;
                        }
                        orphans.remove(id, orphan);
                        if (txn.isSucceeded()) {
                            log.info("released {}, whose release had failed, at a later renewal", orphan.key());
                        }
                    });
        });
    }

    void clear() {
        orphans.clear();
    }
}
