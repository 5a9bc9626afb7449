package dev.leasehold.etcd;

import static dev.leasehold.etcd.EtcdBindings.ownedBy;

import dev.leasehold.LeaseStoreException;
import dev.leasehold.LockKey;
import dev.leasehold.spi.Grant;
import dev.leasehold.spi.OwnerTokens;
import dev.leasehold.spi.Renewal;
import io.etcd.jetcd.KV;
import io.etcd.jetcd.KeyValue;
import io.etcd.jetcd.kv.GetResponse;
import io.etcd.jetcd.kv.TxnResponse;
import io.etcd.jetcd.lease.LeaseKeepAliveResponse;
import io.etcd.jetcd.op.Op;
import io.etcd.jetcd.options.GetOption;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.CompletableFuture;

/**
 * The batch renewal of an {@link EtcdLeaseStore}: every keep-alive of the batch in flight at once,
 * then one transaction that reads every key back, so a batch costs two waits where renewing lease
 * by lease costs two per lease. Each lease is judged as a single renewal judges it: renewed only
 * while its key is still the owner's and still on the lease that was kept alive. A lease this
 * store did not bind, or whose answer asks for more (another length, a newer binding), is renewed
 * on its own. Thread-safe.
 */
final class EtcdRenewals {

    /**
     * The most leases one transaction reads back; etcd refuses a transaction of more than its
     * {@code --max-txn-ops} operations (128 by default).
     */
    static final int LIMIT = 100;

    private final KV kv;
    private final EtcdKeys keys;
    private final EtcdCalls calls;
    private final EtcdBindings bindings;
    private final Grants grants;
    private final Single single;

    /** How a lease is renewed on its own: the store's {@code renew}. */
    interface Single {
        Optional<Grant> renew(Renewal renewal);
    }

    /** The store's grant of a fence with what is left of its lease. */
    interface Grants {
        Grant of(long fence, Duration remaining);
    }

    EtcdRenewals(KV kv, EtcdKeys keys, EtcdCalls calls, EtcdBindings bindings, Grants grants, Single single) {
        this.kv = kv;
        this.keys = keys;
        this.calls = calls;
        this.bindings = bindings;
        this.grants = grants;
        this.single = single;
    }

    List<Optional<Grant>> renew(List<Renewal> batch) {
        List<Optional<Grant>> answers = new ArrayList<>(batch.size());
        for (int from = 0; from < batch.size(); from += LIMIT) {
            answers.addAll(renewChunk(batch.subList(from, Math.min(batch.size(), from + LIMIT))));
        }
        return answers;
    }

    private List<Optional<Grant>> renewChunk(List<Renewal> chunk) {
        int n = chunk.size();
        long[] leaseIds = new long[n];
        long[] ttls = new long[n];
        for (int i = 0; i < n; i++) { // refuse bad input before anything is sent
            OwnerTokens.check(chunk.get(i).owner());
            ttls[i] = bindings.ttlSeconds(chunk.get(i).leaseFor());
        }
        // Keys granted together share an etcd lease: one keep-alive per lease, however many keys,
        // and none for a lease etcd confirmed alive lately (another batch's keep-alive): its
        // keys get what is left of it, counted from now, before their read.
        long now = System.nanoTime();
        boolean[] bound = new boolean[n];
        Map<Long, CompletableFuture<LeaseKeepAliveResponse>> sent = new HashMap<>();
        Map<Long, Duration> left = new HashMap<>();
        for (int i = 0; i < n; i++) {
            Renewal renewal = chunk.get(i);
            Long known = bindings.leaseOf(renewal.key().render(), renewal.owner());
            bound[i] = known != null;
            leaseIds[i] = known == null ? 0 : known;
            if (known != null && !sent.containsKey(known) && !left.containsKey(known)) {
                Duration confirmed = bindings.confirmedLately(known, now);
                if (confirmed != null) {
                    left.put(known, confirmed);
                } else {
                    sent.put(known, bindings.keepAliveAsync(known));
                }
            }
        }
        long deadline = calls.deadline(); // one timeout for the keep-alives sent together
        Map<Long, Long> ttlOfLease = new HashMap<>();
        LeaseStoreException failure = null;
        for (int i = 0; i < n; i++) {
            if (!sent.containsKey(leaseIds[i]) || ttlOfLease.containsKey(leaseIds[i])) {
                continue; // each keep-alive is waited for once: a timeout cancels it
            }
            try {
                ttlOfLease.put(leaseIds[i], bindings.keptAlive(chunk.get(i).key(), sent.get(leaseIds[i]), deadline));
            } catch (LeaseStoreException e) {
                // wait for every answer before failing, so none is left running behind the call
                ttlOfLease.put(leaseIds[i], 0L);
                failure = failure == null ? e : failure;
            }
        }
        if (failure != null) {
            throw failure;
        }
        // Read after the keep-alives: a key still ours on that lease now was extended while ours.
        List<KeyValue> current = readBack(chunk, bound);
        List<Optional<Grant>> answers = new ArrayList<>(n);
        // A key renewed on its own may have moved to another lease since the read: its later
        // entries in this chunk are renewed on their own too, after it, as renew() would.
        Set<String> renewedAlone = new HashSet<>();
        for (int i = 0; i < n; i++) {
            Renewal renewal = chunk.get(i);
            String rendered = renewal.key().render();
            if (!bound[i] || renewedAlone.contains(rendered)) {
                renewedAlone.add(rendered);
                answers.add(single.renew(renewal));
                continue;
            }
            long leaseTtl = sent.containsKey(leaseIds[i]) ? ttlOfLease.get(leaseIds[i]) : bindings.ttlOf(leaseIds[i]);
            KeyValue found = current.get(i);
            if (!ownedBy(found, renewal.owner())) {
                bindings.forget(rendered, renewal.owner());
                answers.add(Optional.empty());
            } else if (found.getLease() != leaseIds[i] || (leaseTtl > 0 && leaseTtl != ttls[i])) {
                renewedAlone.add(rendered);
                answers.add(single.renew(renewal)); // a newer binding, or another length
            } else if (leaseTtl <= 0) {
                bindings.forget(rendered, renewal.owner());
                answers.add(Optional.empty());
            } else {
                Duration remaining = left.getOrDefault(leaseIds[i], Duration.ofSeconds(leaseTtl));
                answers.add(Optional.of(grants.of(found.getCreateRevision(), remaining)));
            }
        }
        return answers;
    }

    /** Every key on a lease this store bound, read in one transaction; null for the others. */
    private List<KeyValue> readBack(List<Renewal> chunk, boolean[] bound) {
        List<Op> reads = new ArrayList<>();
        for (int i = 0; i < chunk.size(); i++) {
            if (bound[i]) {
                reads.add(Op.get(keys.lease(chunk.get(i).key()), GetOption.DEFAULT));
            }
        }
        List<KeyValue> current = new ArrayList<>(chunk.size());
        if (reads.isEmpty()) {
            chunk.forEach(r -> current.add(null));
            return current;
        }
        LockKey first = chunk.get(0).key();
        TxnResponse read = calls.call(
                "renew",
                chunk.size() == 1 ? first.render() : first.render() + " and " + (chunk.size() - 1) + " more",
                kv.txn().Then(reads.toArray(Op[]::new)).commit());
        List<GetResponse> answers = read.getGetResponses();
        int next = 0;
        for (int i = 0; i < chunk.size(); i++) {
            if (!bound[i]) {
                current.add(null);
            } else {
                List<KeyValue> found =
                        Objects.requireNonNull(answers.get(next++)).getKvs();
                current.add(found.isEmpty() ? null : found.get(0));
            }
        }
        return current;
    }
}
