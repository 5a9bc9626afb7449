package dev.leasehold.redis;

import dev.leasehold.LeaseStoreException;
import io.lettuce.core.RedisClient;
import io.lettuce.core.RedisException;
import io.lettuce.core.api.StatefulConnection;
import io.lettuce.core.api.StatefulRedisConnection;
import io.lettuce.core.api.sync.RedisServerCommands;
import io.lettuce.core.cluster.RedisClusterClient;
import io.lettuce.core.cluster.api.StatefulRedisClusterConnection;
import io.lettuce.core.cluster.api.sync.RedisClusterCommands;
import io.lettuce.core.pubsub.StatefulRedisPubSubConnection;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.function.Supplier;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * How a {@link RedisLeaseStore} reaches Redis: a standalone or Sentinel client, or a cluster
 * client. {@link #open} connects the command connection and checks every server the store writes
 * to; pub/sub and writer connections are opened by the store when it needs them.
 */
final class RedisConnector {

    private static final Logger log = LoggerFactory.getLogger(RedisConnector.class);
    private static final Pattern LOCAL_ADDRESS = Pattern.compile("(?:^|\\s)laddr=(\\S+)");

    /** An open command connection, and whether release notices travel by sharded pub/sub. */
    record Opened(
            StatefulConnection<String, String> connection,
            RedisClusterCommands<String, String> commands,
            boolean sharded) {}

    private record Connection(
            StatefulConnection<String, String> connection,
            RedisClusterCommands<String, String> commands,
            Supplier<Map<String, RedisServerCommands<String, String>>> servers) {}

    private final Supplier<Connection> connect;
    private final Supplier<StatefulRedisPubSubConnection<String, String>> pubSubFactory;
    private final Supplier<StatefulRedisConnection<String, String>> writerFactory;
    private final String name;
    private final boolean cluster;

    private RedisConnector(
            Supplier<Connection> connect,
            Supplier<StatefulRedisPubSubConnection<String, String>> pubSubFactory,
            Supplier<StatefulRedisConnection<String, String>> writerFactory,
            String name,
            boolean cluster) {
        this.connect = connect;
        this.pubSubFactory = pubSubFactory;
        this.writerFactory = writerFactory;
        this.name = name;
        this.cluster = cluster;
    }

    static RedisConnector standalone(RedisClient client) {
        return new RedisConnector(
                () -> {
                    StatefulRedisConnection<String, String> connection = client.connect();
                    return new Connection(
                            connection, connection.sync(), () -> Map.of(address(connection.sync()), connection.sync()));
                },
                client::connectPubSub,
                client::connect,
                "redis",
                false);
    }

    static RedisConnector cluster(RedisClusterClient client) {
        return new RedisConnector(
                () -> {
                    StatefulRedisClusterConnection<String, String> connection = client.connect();
                    return new Connection(connection, connection.sync(), () -> {
                        Map<String, RedisServerCommands<String, String>> masters = new LinkedHashMap<>();
                        connection
                                .sync()
                                .upstream()
                                .asMap()
                                .forEach((node, commands) -> masters.put(
                                        node.getUri().getHost() + ":"
                                                + node.getUri().getPort(),
                                        commands));
                        return masters;
                    });
                },
                client::connectPubSub,
                null,
                "redis-cluster",
                true);
    }

    String name() {
        return name;
    }

    boolean cluster() {
        return cluster;
    }

    Supplier<StatefulRedisPubSubConnection<String, String>> pubSubFactory() {
        return pubSubFactory;
    }

    /** Opens standalone connections of their own, for writes that {@code WAIT}; null on a cluster. */
    Supplier<StatefulRedisConnection<String, String>> writerFactory() {
        return writerFactory;
    }

    /**
     * Connects and checks every server the store writes to (every master of a cluster); closes
     * the connection again when a check fails.
     *
     * @param acknowledgement the store's acknowledgement, or null
     * @throws LeaseStoreException if Redis cannot be reached
     * @throws IllegalStateException naming the server and what is wrong with it
     */
    Opened open(ReplicaAcknowledgement.Policy acknowledgement, boolean allowEviction) {
        Connection opened;
        try {
            opened = connect.get();
        } catch (RedisException e) {
            throw new LeaseStoreException("connect", "(any)", e);
        }
        try {
            return new Opened(opened.connection(), opened.commands(), check(opened, acknowledgement, allowEviction));
        } catch (RuntimeException e) {
            opened.connection().close();
            throw e instanceof RedisException redisFailure
                    ? new LeaseStoreException("connect", "(any)", redisFailure)
                    : e;
        }
    }

    /** Checks the servers; returns whether release notices may travel by sharded pub/sub. */
    private boolean check(Connection opened, ReplicaAcknowledgement.Policy acknowledgement, boolean allowEviction) {
        if (acknowledgement != null
                && acknowledgement.timeout().compareTo(opened.connection().getTimeout()) >= 0) {
            throw new IllegalStateException("the acknowledgement timeout ("
                    + acknowledgement.timeout().toMillis()
                    + " ms) must be shorter than the client's command timeout ("
                    + opened.connection().getTimeout().toMillis() + " ms), or the client gives up first");
        }
        boolean aof = acknowledgement != null && acknowledgement.aof();
        Map<String, Optional<ServerChecks.Version>> versions = new LinkedHashMap<>();
        opened.servers().get().forEach((server, serverCommands) -> {
            versions.put(
                    server,
                    ServerChecks.checkVersion(
                            server,
                            serverCommands,
                            aof ? ServerChecks.WAITAOF : ServerChecks.MINIMUM,
                            "aofAcknowledgement (WAITAOF)"));
            ServerChecks.checkEviction(server, serverCommands, allowEviction);
        });
        List<String> withoutShardedPubSub = ServerChecks.withoutShardedPubSub(versions);
        boolean sharded = cluster && withoutShardedPubSub.isEmpty();
        if (cluster && !sharded) {
            log.info(
                    "release notices use classic pub/sub, broadcast to every node: sharded pub/sub needs Redis"
                            + " {} or later on every master, and these are older: {}",
                    ServerChecks.SHARDED_PUBSUB,
                    withoutShardedPubSub);
        }
        return sharded;
    }

    /** The server's own address as it reports it ({@code CLIENT INFO}, Redis 6.2+), for messages. */
    private static String address(RedisClusterCommands<String, String> commands) {
        try {
            Matcher matcher = LOCAL_ADDRESS.matcher(commands.clientInfo());
            if (matcher.find()) {
                return matcher.group(1);
            }
        } catch (RedisException e) {
            // older servers have no CLIENT INFO; the message names no address then
        }
        return "the configured address";
    }
}
