package dev.leasehold.redis;

import io.lettuce.core.RedisCommandExecutionException;
import io.lettuce.core.RedisException;
import io.lettuce.core.api.sync.RedisServerCommands;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * What the builder checks on every server a store writes to (every master of a cluster) before it
 * hands out a store: a Redis version whose scripts may read {@code TIME} before they write, and a
 * memory policy that never evicts a lease.
 */
final class ServerChecks {

    private static final Logger log = LoggerFactory.getLogger(ServerChecks.class);
    private static final Pattern VERSION = Pattern.compile("(?m)^redis_version:(\\d+)\\.(\\d+)(?:\\.(\\d+))?");

    /** The oldest Redis whose scripts replicate their effects by default (needed to call TIME first). */
    static final Version MINIMUM = new Version(5, 0, 0);

    /** The first Redis with sharded pub/sub ({@code SPUBLISH}, {@code SSUBSCRIBE}). */
    static final Version SHARDED_PUBSUB = new Version(7, 0, 0);

    /** The first Redis with {@code WAITAOF}. */
    static final Version WAITAOF = new Version(7, 2, 0);

    private ServerChecks() {}

    record Version(int major, int minor, int patch) implements Comparable<Version> {
        @Override
        public int compareTo(Version other) {
            int byMajor = Integer.compare(major, other.major);
            if (byMajor != 0) {
                return byMajor;
            }
            int byMinor = Integer.compare(minor, other.minor);
            return byMinor != 0 ? byMinor : Integer.compare(patch, other.patch);
        }

        @Override
        public String toString() {
            return major + "." + minor + "." + patch;
        }
    }

    /** The {@code redis_version} of an {@code INFO server} reply, if it has one. */
    static Optional<Version> version(String info) {
        Matcher matcher = VERSION.matcher(info == null ? "" : info);
        if (!matcher.find()) {
            return Optional.empty();
        }
        int patch = matcher.group(3) == null ? 0 : Integer.parseInt(matcher.group(3));
        return Optional.of(new Version(Integer.parseInt(matcher.group(1)), Integer.parseInt(matcher.group(2)), patch));
    }

    /**
     * The server's version, refused when older than {@link #MINIMUM} or than {@code needed}; empty
     * when the server does not tell (then it is logged and accepted).
     *
     * @throws IllegalStateException naming the server, its version and the version needed
     */
    static Optional<Version> checkVersion(
            String server, RedisServerCommands<String, String> commands, Version needed, String neededFor) {
        String info;
        try {
            info = commands.info("server");
        } catch (RedisException e) {
            log.warn(
                    "cannot read the version of Redis at {} (INFO server: {}); Leasehold needs Redis {} or later",
                    server,
                    e.getMessage(),
                    MINIMUM);
            return Optional.empty();
        }
        Optional<Version> version = version(info);
        if (version.isEmpty()) {
            log.warn(
                    "Redis at {} does not report redis_version in INFO server; Leasehold needs Redis {} or later",
                    server,
                    MINIMUM);
            return version;
        }
        requireAtLeast(server, version.get(), needed, neededFor);
        return version;
    }

    /**
     * Refuses {@code version} when older than {@link #MINIMUM} or than {@code needed}.
     *
     * @throws IllegalStateException naming the server, its version and the version needed
     */
    static void requireAtLeast(String server, Version version, Version needed, String neededFor) {
        if (version.compareTo(MINIMUM) < 0) {
            throw new IllegalStateException("Redis at " + server + " is version " + version + ": Leasehold needs"
                    + " Redis " + MINIMUM + " or later, whose scripts replicate their effects, so that a script may"
                    + " read the server's clock (TIME) before it writes a lease");
        }
        if (version.compareTo(needed) < 0) {
            throw new IllegalStateException("Redis at " + server + " is version " + version + ": " + neededFor
                    + " needs Redis " + needed + " or later");
        }
    }

    /**
     * The servers, among those given with the version each reported (empty: it did not tell),
     * that cannot take sharded pub/sub: older than {@link #SHARDED_PUBSUB} or of unknown version,
     * each as {@code "server (version)"}. Empty when every one can.
     */
    static List<String> withoutShardedPubSub(Map<String, Optional<Version>> versions) {
        List<String> older = new ArrayList<>();
        versions.forEach((server, version) -> {
            if (version.isEmpty() || version.get().compareTo(SHARDED_PUBSUB) < 0) {
                older.add(server + " (" + version.map(Version::toString).orElse("version unknown") + ")");
            }
        });
        return older;
    }

    /**
     * Refuses a server whose {@code maxmemory-policy} evicts keys unless {@code allowEviction}; a
     * server that refuses {@code CONFIG GET} with an error reply (managed Redis often does) is
     * logged and accepted. A server that does not answer at all (a timeout, a dropped connection)
     * has not been checked, and is refused.
     *
     * @throws IllegalStateException naming the server and its policy, or the failure to read it
     */
    static void checkEviction(String server, RedisServerCommands<String, String> commands, boolean allowEviction) {
        String policy;
        try {
            Map<String, String> reply = commands.configGet("maxmemory-policy");
            policy = reply.get("maxmemory-policy");
        } catch (RedisCommandExecutionException e) {
            log.warn(
                    "cannot read maxmemory-policy of Redis at {} (CONFIG GET refused: {}); make sure it is"
                            + " noeviction: an evicted lease is granted to a second holder",
                    server,
                    e.getMessage());
            return;
        } catch (RedisException e) {
            throw new IllegalStateException(
                    "could not check maxmemory-policy of Redis at " + server + ": CONFIG GET got no answer ("
                            + e.getMessage() + "); an evicting server would grant an evicted lease to a second"
                            + " holder, so the store is not built unchecked",
                    e);
        }
        if (policy == null) {
            log.warn("Redis at {} did not report maxmemory-policy; make sure it is noeviction", server);
            return;
        }
        if (policy.equals("noeviction")) {
            return;
        }
        if (allowEviction) {
            log.warn(
                    "Redis at {} evicts keys (maxmemory-policy {}): accepted because the store was built with"
                            + " allowEvictingMemoryPolicy(); an evicted lease is granted to a second holder",
                    server,
                    policy);
            return;
        }
        throw new IllegalStateException("Redis at " + server + " evicts keys under memory pressure (maxmemory-policy "
                + policy + "): a held lease could be evicted and granted to a second holder. Set maxmemory-policy"
                + " noeviction on this server, or build the store with allowEvictingMemoryPolicy() to accept the"
                + " risk");
    }
}
