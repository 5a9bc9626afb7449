package dev.leasehold.redis;

import static dev.leasehold.redis.RedisReplies.asLong;
import static dev.leasehold.redis.RedisReplies.instant;

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
 * Renews a batch of leases of a {@link RedisLeaseStore} with one {@code renew-all} script per slot
 * among their keys (one for the whole batch off a cluster). Each lease is renewed or not on its
 * own, as {@code renew} does it. Thread-safe.
 */
final class RedisRenewals {

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
