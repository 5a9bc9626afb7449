package dev.leasehold.etcd;

import dev.leasehold.LockKey;
import io.etcd.jetcd.ByteSequence;
import java.nio.charset.StandardCharsets;

/**
 * Names the etcd keys of one lock: the lease, its force-release marker (also under one store-wide
 * prefix) and the settle marker of an etcd lease. The rendered key sits between braces, which
 * {@link LockKey} forbids in its parts, so a prefix watch on {@code prefix{rendered}} sees exactly
 * the lock's own keys. The layout is in {@code docs/design/etcd.md}.
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
