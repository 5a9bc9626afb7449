package dev.leasehold.redis;

import static dev.leasehold.redis.RedisReplies.asLong;
import static dev.leasehold.redis.RedisReplies.instant;

import dev.leasehold.LeaseStoreException;
import dev.leasehold.LockKey;
import dev.leasehold.spi.Grant;
import dev.leasehold.spi.PartialRenewalException;
import dev.leasehold.spi.Renewal;
import io.lettuce.core.RedisCommandTimeoutException;
import io.lettuce.core.ScriptOutputType;
import io.lettuce.core.api.async.RedisScriptingAsyncCommands;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/**
 * Renews the leases of a {@link RedisLeaseStore}: one with the {@code renew} script, a batch with
 * one {@code renew-all} script per slot among its keys (one for the whole batch off a cluster), in
 * which each lease is renewed or not on its own, as {@code renew} does it; a slot group that fails
 * fails only its own leases ({@code RedisClusterRenewalTest}). Thread-safe.
 */
final class RedisRenewals {

    static final Script RENEW = Script.load("renew");
    static final Script RENEW_ALL = Script.load("renew-all");

    /** The most leases one script renews: a few milliseconds of the server's time. */
    static final int BATCH_LIMIT = 500;

    private final RedisWrites writes;
    private final RedisKeys keys;
    private final boolean cluster;
    private final RedisScriptingAsyncCommands<String, String> async; // null: the groups go in turn
    private final Duration timeout;

    /**
     * @param async the store's connection, for sending a cluster batch's slot groups at once; null
     *     to send them in turn
     * @param timeout the client's command timeout: the longest a group is waited for
     */
    RedisRenewals(
            RedisWrites writes,
            RedisKeys keys,
            boolean cluster,
            RedisScriptingAsyncCommands<String, String> async,
            Duration timeout) {
        this.writes = writes;
        this.keys = keys;
        this.cluster = cluster;
        this.async = async;
        this.timeout = timeout;
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

    /**
     * The answers in the batch's order; the caller has checked every owner. Each slot group has its
     * own outcome: when a group fails and another is answered, {@link PartialRenewalException}
     * carries both. On a cluster the groups are sent at once, and a group that has no answer within
     * a third of the batch's shortest lease (the margin its leases have left) fails, so that one
     * stalled node cannot hold back the answers of the others until their leases are gone.
     */
    List<Optional<Grant>> renew(List<Renewal> batch) {
        List<List<Renewal>> groups = RedisBatch.groupsBySlot(batch, Renewal::key, keys, cluster);
        if (groups.size() == 1) {
            return answers(groups.get(0), renewGroup(groups.get(0))); // one outcome: it throws as it failed
        }
        Map<Renewal, Optional<Grant>> answers = new HashMap<>();
        Map<Renewal, RuntimeException> failures = new HashMap<>();
        List<Reply> replies = async != null && !writes.acknowledged() ? sendAtOnce(groups) : sendInTurn(groups);
        for (int g = 0; g < groups.size(); g++) {
            List<Renewal> group = groups.get(g);
            Reply reply = replies.get(g);
            List<Optional<Grant>> groupAnswers = null;
            RuntimeException failure = reply.failure();
            if (failure == null) {
                try {
                    groupAnswers = answers(group, reply.reply());
                } catch (RuntimeException e) {
                    failure = new LeaseStoreException("renew", what(group), e);
                }
            }
            for (int i = 0; i < group.size(); i++) {
                if (failure != null) {
                    failures.put(group.get(i), failure);
                } else {
                    answers.put(group.get(i), groupAnswers.get(i));
                }
            }
        }
        List<Optional<Grant>> inOrder = new ArrayList<>(batch.size());
        List<RuntimeException> failed = new ArrayList<>(batch.size());
        for (Renewal renewal : batch) {
            inOrder.add(answers.get(renewal));
            failed.add(failures.get(renewal));
        }
        if (failures.isEmpty()) {
            return inOrder;
        }
        throw new PartialRenewalException(inOrder, failed);
    }

    /** A slot group's script reply, or why it has none. */
    private record Reply(List<Object> reply, RuntimeException failure) {}

    /** The groups one after the other, on the store's connection (or its acknowledged writers). */
    private List<Reply> sendInTurn(List<List<Renewal>> groups) {
        List<Reply> replies = new ArrayList<>(groups.size());
        for (List<Renewal> group : groups) {
            try {
                replies.add(new Reply(renewGroup(group), null));
            } catch (RuntimeException e) {
                replies.add(new Reply(null, e));
            }
        }
        return replies;
    }

    /**
     * Every group at once. Each group is waited for until a third of its own shortest lease has
     * passed since it was sent, or the client's command timeout when that is shorter; a timeout of
     * zero or less is Lettuce's "no timeout" and bounds nothing. The batch answers once every group
     * has, and a lease's next renewal falls due a third of its lease after that answer, so a longer
     * wait for one group would leave the others' leases too little time. A group left without an
     * answer is cancelled, and only its own leases fail (each is tried again at its next period).
     */
    private List<Reply> sendAtOnce(List<List<Renewal>> groups) {
        long sentAt = System.nanoTime();
        List<CompletableFuture<List<Object>>> sent = new ArrayList<>(groups.size());
        long[] waits = new long[groups.size()];
        for (int g = 0; g < groups.size(); g++) {
            List<Renewal> group = groups.get(g);
            waits[g] = groupWait(group, timeout).toNanos();
            Script.Call call = call(group);
            CompletableFuture<List<Object>> reply;
            try {
                reply = RENEW_ALL
                        .<List<Object>>runAsync(async, ScriptOutputType.MULTI, call.keys(), call.args())
                        .toCompletableFuture();
            } catch (RuntimeException e) {
                reply = CompletableFuture.failedFuture(e);
            }
            sent.add(reply);
        }
        List<Reply> replies = new ArrayList<>(groups.size());
        for (int g = 0; g < groups.size(); g++) {
            String what = what(groups.get(g));
            CompletableFuture<List<Object>> reply = sent.get(g);
            try {
                long left = Math.max(0, sentAt + waits[g] - System.nanoTime());
                replies.add(new Reply(reply.get(left, TimeUnit.NANOSECONDS), null));
            } catch (TimeoutException e) {
                reply.cancel(false);
                replies.add(new Reply(
                        null,
                        new LeaseStoreException(
                                "renew",
                                what,
                                new RedisCommandTimeoutException(
                                        "no answer within " + TimeUnit.NANOSECONDS.toMillis(waits[g]) + " ms"))));
            } catch (ExecutionException e) {
                replies.add(new Reply(null, new LeaseStoreException("renew", what, e.getCause())));
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                reply.cancel(false);
                replies.add(new Reply(null, new LeaseStoreException("renew", what, e)));
            }
        }
        return replies;
    }

    /**
     * How long one slot group's answer is waited for: a third of its shortest lease, or the
     * client's timeout when that is set (above zero) and shorter; at least a millisecond.
     */
    static Duration groupWait(List<Renewal> group, Duration clientTimeout) {
        Duration wait = group.stream()
                .map(renewal -> renewal.leaseFor().dividedBy(3))
                .min(Comparator.naturalOrder())
                .orElseThrow();
        if (clientTimeout != null && clientTimeout.compareTo(Duration.ZERO) > 0 && clientTimeout.compareTo(wait) < 0) {
            wait = clientTimeout;
        }
        return wait.compareTo(Duration.ofMillis(1)) < 0 ? Duration.ofMillis(1) : wait;
    }

    /** A group's answers from its script reply, in the group's order. */
    private static List<Optional<Grant>> answers(List<Renewal> group, List<Object> reply) {
        Instant now = instant(reply.get(0), reply.get(1));
        List<Optional<Grant>> answers = new ArrayList<>(group.size());
        for (int i = 0; i < group.size(); i++) {
            long fence = asLong(reply.get(2 + i));
            Duration leaseFor = group.get(i).leaseFor();
            answers.add(fence < 0 ? Optional.empty() : Optional.of(new Grant(fence, leaseFor, now.plus(leaseFor))));
        }
        return answers;
    }

    private static String what(List<Renewal> group) {
        return group.size() == 1 ? group.get(0).key().render() : group.size() + " leases";
    }

    private List<Object> renewGroup(List<Renewal> group) {
        Script.Call call = call(group);
        return writes.write(
                "renew",
                what(group),
                commands -> RENEW_ALL.run(commands, ScriptOutputType.MULTI, call.keys(), call.args()),
                renewed -> renewed.stream().skip(2).anyMatch(fence -> asLong(fence) >= 0),
                renewed -> "the renewals stay on the master");
    }

    /** The keys and arguments of a group's {@code renew-all} call. */
    private Script.Call call(List<Renewal> group) {
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
        return new Script.Call(scriptKeys, args);
    }
}
