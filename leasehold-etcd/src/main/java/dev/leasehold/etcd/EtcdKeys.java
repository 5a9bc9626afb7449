package dev.leasehold.etcd;

import dev.leasehold.LockKey;
import io.etcd.jetcd.ByteSequence;
import java.nio.charset.StandardCharsets;

/**
 * Names the etcd keys of one lock. The rendered lock key sits between braces, which {@link LockKey}
 * forbids in its parts, so every etcd key that starts with {@code prefix{rendered}} belongs to that
 * one lock, and a prefix watch on it sees exactly its lease and its force-release marker:
 *
 * <pre>
 * {prefix}{borrow:t42:B1}          the lease: value = owner token, bound to an etcd lease
 * {prefix}{borrow:t42:B1}forced    marker put in the force-release transaction (value = fence)
 * {prefix}forced/borrow:t42:B1     the same marker under one prefix for store-wide subscribers
 * {prefix}settled/{lease id, hex}  put when a transaction binding a key to that etcd lease gave
 *                                  no answer; that transaction requires it absent, so it can no
 *                                  longer apply once the marker is there
 * </pre>
 *
 * Force markers live on a short etcd lease of their own, settle markers on the lease they name,
 * and both vanish by themselves.
 */
final class EtcdKeys {

    private static final String FORCED_SUFFIX = "forced";
    private static final String SETTLED = "settled/";

    private final String prefix;

    EtcdKeys(String prefix) {
        this.prefix = prefix;
    }

    /** The lease key; also the prefix of every key of the lock (lease and per-key marker). */
    ByteSequence lease(LockKey key) {
        return bytes(leaseText(key.render()));
    }

    ByteSequence keyMarker(LockKey key) {
        return bytes(leaseText(key.render()) + FORCED_SUFFIX);
    }

    ByteSequence storeMarker(LockKey key) {
        return bytes(storeMarkerPrefixText() + key.render());
    }

    ByteSequence storeMarkerPrefix() {
        return bytes(storeMarkerPrefixText());
    }

    ByteSequence settleMarker(long leaseId) {
        return bytes(prefix + SETTLED + Long.toHexString(leaseId));
    }

    /** The prefix of every lease (and key marker) of a namespace. */
    ByteSequence namespace(String namespace) {
        return bytes(prefix + "{" + namespace + ":");
    }

    /** The rendered lock key of a lease key, or {@code null} if the etcd key is not a lease. */
    String renderedOfLease(ByteSequence etcdKey) {
        String text = etcdKey.toString(StandardCharsets.UTF_8);
        if (!text.startsWith(prefix + "{") || !text.endsWith("}")) {
            return null;
        }
        return text.substring(prefix.length() + 1, text.length() - 1);
    }

    /** The rendered lock key of a store-wide marker. */
    String renderedOfStoreMarker(ByteSequence etcdKey) {
        return etcdKey.toString(StandardCharsets.UTF_8)
                .substring(storeMarkerPrefixText().length());
    }

    private String leaseText(String rendered) {
        return prefix + "{" + rendered + "}";
    }

    private String storeMarkerPrefixText() {
        return prefix + FORCED_SUFFIX + "/";
    }

    static ByteSequence bytes(String text) {
        return ByteSequence.from(text, StandardCharsets.UTF_8);
    }
}
