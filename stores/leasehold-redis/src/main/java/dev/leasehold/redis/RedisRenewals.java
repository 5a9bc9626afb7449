package dev.leasehold.redis;

import static dev.leasehold.redis.RedisReplies.asLong;
import static dev.leasehold.redis.RedisReplies.instant;

import dev.leasehold.LockKey;
import dev.leasehold.spi.Grant;
import dev.leasehold.spi.Renewal;
import io.lettuce.core.ScriptOutputType;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * Renews the leases of a {@link RedisLeaseStore}: one with the {@code renew} script, a batch with
 * one {@code renew-all} script per slot among its keys (one for the whole batch off a cluster), in
 * which each lease is renewed or not on its own, as {@code renew} does it. Thread-safe.
 */
final class RedisRenewals {

    static final Script RENEW = Script.load("renew");
    static final Script RENEW_ALL = Script.load("renew-all");

    /** The most leases one script renews: a few milliseconds of the server's time. */
    static final int BATCH_LIMIT = 500;

    private final RedisWrites writes;
    private final RedisKeys keys;
    private final boolean cluster;

    RedisRenewals(RedisWrites writes, RedisKeys keys, boolean cluster) {
        this.writes = writes;
        this.keys = keys;
        this.cluster = cluster;
    }

    /** One lease, for {@code millis} ms; the caller has checked the owner. */
    Optional<Grant> renew(LockKey key, String owner, String millis) {
        List<Object> reply = writes.write(
                "renew",
                key.render(),
                commands -> RENEW.run(commands, ScriptOutputType.MULTI, new String[] {keys.lease(key)}, owner, millis),
                renewed -> !renewed.isEmpty(),
                renewed -> "the renewal stays on the master");
        return reply.isEmpty() ? Optional.empty() : Optional.of(RedisReplies.grant(reply, 0));
    }

    /** The answers in the batch's order; the caller has checked every owner. */
    List<Optional<Grant>> renew(List<Renewal> batch) {
        Map<Renewal, Optional<Grant>> answers = new HashMap<>();
        for (List<Renewal> group : RedisBatch.groupsBySlot(batch, Renewal::key, keys, cluster)) {
            List<Object> reply = renewGroup(group);
            Instant now = instant(reply.get(0), reply.get(1));
            for (int i = 0; i < group.size(); i++) {
                long fence = asLong(reply.get(2 + i));
                Duration leaseFor = group.get(i).leaseFor();
                answers.put(
                        group.get(i),
                        fence < 0 ? Optional.empty() : Optional.of(new Grant(fence, leaseFor, now.plus(leaseFor))));
            }
        }
        List<Optional<Grant>> inOrder = new ArrayList<>(batch.size());
        for (Renewal renewal : batch) {
            inOrder.add(answers.get(renewal));
        }
        return inOrder;
    }

    private List<Object> renewGroup(List<Renewal> group) {
        String[] scriptKeys = new String[group.size()];
        String[] args = new String[group.size() * 2];
        Duration lastLease = null;
        String lastMillis = null;
        for (int i = 0; i < group.size(); i++) {
            Renewal renewal = group.get(i);
            scriptKeys[i] = keys.lease(renewal.key());
            args[i] = renewal.owner();
            if (!renewal.leaseFor().equals(lastLease)) { // a batch mostly shares one lease time
                lastLease = renewal.leaseFor();
                lastMillis = Long.toString(lastLease.toMillis());
            }
            args[group.size() + i] = lastMillis;
        }
        String what = group.size() == 1 ? group.get(0).key().render() : group.size() + " leases";
        return writes.write(
                "renew",
                what,
                commands -> RENEW_ALL.run(commands, ScriptOutputType.MULTI, scriptKeys, args),
                renewed -> renewed.stream().skip(2).anyMatch(fence -> asLong(fence) >= 0),
                renewed -> "the renewals stay on the master");
    }
}
