package dev.leasehold.bench;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import dev.leasehold.Lease;
import dev.leasehold.LeaseOptions;
import dev.leasehold.LockKey;
import dev.leasehold.LockService;
import dev.leasehold.jdbc.Database;
import dev.leasehold.jdbc.JdbcLeaseStore;
import dev.leasehold.jdbc.JdbcSchema;
import dev.leasehold.redis.RedisLeaseStore;
import io.lettuce.core.RedisClient;
import io.lettuce.core.ScriptOutputType;
import io.lettuce.core.SetArgs;
import io.lettuce.core.api.StatefulRedisConnection;
import io.lettuce.core.api.sync.RedisCommands;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.Statement;
import java.time.Duration;
import java.time.Instant;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.Lock;
import javax.sql.DataSource;
import net.javacrumbs.shedlock.core.LockConfiguration;
import net.javacrumbs.shedlock.core.SimpleLock;
import net.javacrumbs.shedlock.provider.jdbctemplate.JdbcTemplateLockProvider;
import org.redisson.Redisson;
import org.redisson.api.RFencedLock;
import org.redisson.api.RedissonClient;
import org.redisson.config.Config;
import org.springframework.data.redis.connection.RedisStandaloneConfiguration;
import org.springframework.data.redis.connection.lettuce.LettuceConnectionFactory;
import org.springframework.integration.jdbc.lock.DefaultLockRepository;
import org.springframework.integration.jdbc.lock.JdbcLockRegistry;
import org.springframework.integration.redis.util.RedisLockRegistry;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.jdbc.datasource.DataSourceTransactionManager;

/** The contenders, each built on its own client against the same servers. */
final class Contenders {

    private Contenders() {}

    static final Duration LEASE = Duration.ofSeconds(30);

    // ---------------------------------------------------------------- Redis

    /**
     * The floor: SET NX PX, then a compare-and-delete script called by SHA, each thread on a connection
     * of its own (no pipelining with other threads), a token from a counter (no random source).
     */
    static Contender rawRedis(String uri) {
        RedisClient client = RedisClient.create(uri);
        String sha;
        try (StatefulRedisConnection<String, String> loader = client.connect()) {
            sha = loader.sync().scriptLoad(COMPARE_AND_DELETE);
        }
        java.util.List<StatefulRedisConnection<String, String>> opened =
                new java.util.concurrent.CopyOnWriteArrayList<>();
        ThreadLocal<RedisCommands<String, String>> perThread = ThreadLocal.withInitial(() -> {
            StatefulRedisConnection<String, String> connection = client.connect();
            opened.add(connection);
            return connection.sync();
        });
        String prefix = Long.toString(System.nanoTime(), 36) + "-";
        java.util.concurrent.atomic.AtomicLong tokens = new java.util.concurrent.atomic.AtomicLong();
        SetArgs nxPx = SetArgs.Builder.nx().px(LEASE.toMillis());
        return new Contender() {
            @Override
            public String name() {
                return "raw Lettuce SET NX PX + EVALSHA";
            }

            @Override
            public String backend() {
                return "redis";
            }

            @Override
            public boolean floor() {
                return true;
            }

            @Override
            public java.util.Set<String> plainCommands() {
                return java.util.Set.of("set");
            }

            @Override
            public Held tryLock(String key) {
                RedisCommands<String, String> redis = perThread.get();
                String token = prefix + tokens.incrementAndGet();
                String redisKey = "floor:" + key;
                if (redis.set(redisKey, token, nxPx) == null) {
                    return null;
                }
                String[] keys = {redisKey};
                return () -> perThread.get().evalsha(sha, ScriptOutputType.INTEGER, keys, token);
            }

            @Override
            public Held lock(String key, Duration wait) throws Exception {
                return spin(this, key, wait);
            }

            @Override
            public void close() {
                opened.forEach(StatefulRedisConnection::close);
                client.shutdown();
            }
        };
    }

    private static final String COMPARE_AND_DELETE =
            "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) else return 0 end";

    static Contender leaseholdRedis(String uri) {
        RedisClient client = RedisClient.create(uri);
        RedisLeaseStore store =
                RedisLeaseStore.builder(client).keyPrefix("bench:").build();
        return leasehold(
                "Leasehold (Redis)", "redis", LockService.builder(store).build(), () -> {
                    store.close();
                    client.shutdown();
                });
    }

    /** Leasehold on the Redis store's bounded barging mode, with its default bound. */
    static Contender leaseholdRedisBarging(String uri) {
        RedisClient client = RedisClient.create(uri);
        RedisLeaseStore store = RedisLeaseStore.builder(client)
                .keyPrefix("bench:")
                .bargingBound(RedisLeaseStore.DEFAULT_BARGING_BOUND)
                .build();
        return leasehold(
                "Leasehold (Redis, bounded barging)",
                "redis",
                LockService.builder(store).build(),
                () -> {
                    store.close();
                    client.shutdown();
                });
    }

    /** Redisson's {@code RFairLock}: a FIFO of waiters across processes, kept in Redis. */
    static Contender redissonFair(String uri) {
        RedissonClient redisson = redissonClient(uri);
        return new Contender() {
            @Override
            public String name() {
                return "Redisson RFairLock";
            }

            @Override
            public String backend() {
                return "redis";
            }

            @Override
            public Held tryLock(String key) {
                org.redisson.api.RLock lock = redisson.getFairLock("rfair:" + key);
                return lock.tryLock() ? lock::unlock : null;
            }

            @Override
            public Held lock(String key, Duration wait) throws InterruptedException {
                org.redisson.api.RLock lock = redisson.getFairLock("rfair:" + key);
                return lock.tryLock(wait.toMillis(), TimeUnit.MILLISECONDS) ? lock::unlock : null;
            }

            @Override
            public void close() {
                redisson.shutdown();
            }
        };
    }

    private static RedissonClient redissonClient(String uri) {
        Config config = new Config();
        config.useSingleServer().setAddress(uri).setConnectionMinimumIdleSize(8).setConnectionPoolSize(16);
        return Redisson.create(config);
    }

    /** Leasehold on the Redis store's fair mode (one queue per key in Redis, hand-off at release). */
    static Contender leaseholdRedisFair(String uri, Duration queueTtl) {
        RedisClient client = RedisClient.create(uri);
        RedisLeaseStore store = RedisLeaseStore.builder(client)
                .keyPrefix("bench:")
                .fairQueue(queueTtl)
                .build();
        return leasehold(
                "Leasehold (Redis, fair queue)",
                "redis",
                LockService.builder(store).build(),
                () -> {
                    store.close();
                    client.shutdown();
                });
    }

    static Contender redisson(String uri, boolean fenced) {
        RedissonClient redisson = redissonClient(uri);
        return new Contender() {
            @Override
            public String name() {
                return fenced ? "Redisson RFencedLock" : "Redisson RLock";
            }

            @Override
            public String backend() {
                return "redis";
            }

            private org.redisson.api.RLock lockOf(String key) {
                return fenced ? redisson.getFencedLock("rf:" + key) : redisson.getLock("rl:" + key);
            }

            @Override
            public Held tryLock(String key) throws InterruptedException {
                org.redisson.api.RLock lock = lockOf(key);
                if (fenced) {
                    Long token = ((RFencedLock) lock).tryLockAndGetToken(0, TimeUnit.MILLISECONDS);
                    return token == null ? null : lock::unlock;
                }
                return lock.tryLock() ? lock::unlock : null;
            }

            @Override
            public Held lock(String key, Duration wait) throws InterruptedException {
                org.redisson.api.RLock lock = lockOf(key);
                return lock.tryLock(wait.toMillis(), TimeUnit.MILLISECONDS) ? lock::unlock : null;
            }

            @Override
            public void close() {
                redisson.shutdown();
            }
        };
    }

    static Contender springIntegrationRedis(String host, int port, boolean pubSub) {
        LettuceConnectionFactory factory = new LettuceConnectionFactory(new RedisStandaloneConfiguration(host, port));
        factory.afterPropertiesSet();
        factory.start();
        RedisLockRegistry registry = new RedisLockRegistry(factory, "si-" + (pubSub ? "ps" : "spin"), LEASE.toMillis());
        registry.setRedisLockType(
                pubSub ? RedisLockRegistry.RedisLockType.PUB_SUB_LOCK : RedisLockRegistry.RedisLockType.SPIN_LOCK);
        return registryContender(
                "Spring Integration RedisLockRegistry (" + (pubSub ? "pub/sub" : "spin") + ")",
                "redis",
                registry::obtain,
                () -> {
                    registry.destroy();
                    factory.destroy();
                });
    }

    // ---------------------------------------------------------------- SQL

    static HikariDataSource pool(String url, String user, String password) {
        return pool(url, user, password, 12, 12);
    }

    static HikariDataSource pool(String url, String user, String password, int size, int minimumIdle) {
        HikariConfig config = new HikariConfig();
        config.setJdbcUrl(url);
        config.setUsername(user);
        config.setPassword(password);
        config.setMaximumPoolSize(size);
        config.setMinimumIdle(minimumIdle);
        return new HikariDataSource(config);
    }

    /**
     * The floor: one autocommit conditional UPDATE to take a pre-created row, one to give it back, each
     * concurrent caller on a connection of its own (a free list, no pool in between) with the two
     * statements prepared once per connection, a token from a counter.
     * {@link Contender#prepare} creates the rows before a timed pass.
     */
    static Contender rawJdbc(DataSource dataSource, Database database) throws Exception {
        String table = "bench_floor";
        String until = database == Database.POSTGRESQL ? "TIMESTAMPTZ" : "DATETIME(6)";
        String now = database == Database.POSTGRESQL ? "clock_timestamp()" : "NOW(6)";
        String later = database == Database.POSTGRESQL
                ? "clock_timestamp() + interval '30 seconds'"
                : "NOW(6) + INTERVAL 30 SECOND";
        try (Connection c = dataSource.getConnection();
                Statement s = c.createStatement()) {
            s.execute("CREATE TABLE IF NOT EXISTS " + table
                    + " (k VARCHAR(128) PRIMARY KEY, owner VARCHAR(64), until_at " + until + ")");
        }
        String acquire = "UPDATE " + table + " SET owner = ?, until_at = " + later
                + " WHERE k = ? AND (owner IS NULL OR until_at < " + now + ")";
        String release = "UPDATE " + table + " SET owner = NULL WHERE k = ? AND owner = ?";
        String insert = database == Database.POSTGRESQL
                ? "INSERT INTO " + table + " (k) VALUES (?) ON CONFLICT DO NOTHING"
                : "INSERT IGNORE INTO " + table + " (k) VALUES (?)";
        /** One thread's connection and its two prepared statements. */
        final class Session {
            final Connection connection;
            final PreparedStatement take;
            final PreparedStatement give;

            Session() throws java.sql.SQLException {
                connection = dataSource.getConnection();
                connection.setAutoCommit(true);
                take = connection.prepareStatement(acquire);
                give = connection.prepareStatement(release);
            }
        }
        java.util.List<Session> opened = new java.util.concurrent.CopyOnWriteArrayList<>();
        // Idle sessions: a caller takes one for a statement and puts it back, so each concurrent caller
        // works on a connection of its own without a pool in between, and a pass's threads can end.
        java.util.concurrent.ConcurrentLinkedDeque<Session> idle = new java.util.concurrent.ConcurrentLinkedDeque<>();
        java.util.function.Supplier<Session> take = () -> {
            Session session = idle.pollFirst();
            if (session != null) {
                return session;
            }
            try {
                Session created = new Session();
                opened.add(created);
                return created;
            } catch (java.sql.SQLException e) {
                throw new IllegalStateException(e);
            }
        };
        String prefix = Long.toString(System.nanoTime(), 36) + "-";
        java.util.concurrent.atomic.AtomicLong tokens = new java.util.concurrent.atomic.AtomicLong();
        return new Contender() {
            @Override
            public String name() {
                return "raw JDBC UPDATE + UPDATE";
            }

            @Override
            public String backend() {
                return database.id();
            }

            @Override
            public boolean floor() {
                return true;
            }

            @Override
            public void prepare(java.util.Collection<String> keys) throws Exception {
                try (Connection c = dataSource.getConnection();
                        PreparedStatement s = c.prepareStatement(insert)) {
                    c.setAutoCommit(false);
                    for (String key : keys) {
                        s.setString(1, key);
                        s.addBatch();
                    }
                    s.executeBatch();
                    c.commit();
                    c.setAutoCommit(true);
                }
            }

            @Override
            public Held tryLock(String key) throws Exception {
                Session session = take.get();
                String token = prefix + tokens.incrementAndGet();
                int taken;
                try {
                    session.take.setString(1, token);
                    session.take.setString(2, key);
                    taken = session.take.executeUpdate();
                } finally {
                    idle.offerFirst(session);
                }
                if (taken != 1) {
                    return null;
                }
                return () -> {
                    Session giver = take.get();
                    try {
                        giver.give.setString(1, key);
                        giver.give.setString(2, token);
                        giver.give.executeUpdate();
                    } catch (java.sql.SQLException e) {
                        throw new IllegalStateException(e);
                    } finally {
                        idle.offerFirst(giver);
                    }
                };
            }

            @Override
            public Held lock(String key, Duration wait) throws Exception {
                return spin(this, key, wait);
            }

            @Override
            public long sessionStatements() throws java.sql.SQLException {
                long total = 0;
                for (Session session : opened) {
                    total += SessionCounts.statementsSoFar(session.connection, database);
                }
                return total;
            }

            @Override
            public void close() throws java.sql.SQLException {
                for (Session session : opened) {
                    session.connection.close();
                }
            }
        };
    }

    static Contender leaseholdJdbc(DataSource dataSource, Database database) throws Exception {
        JdbcSchema.create(dataSource, database);
        JdbcLeaseStore store =
                JdbcLeaseStore.builder(dataSource).database(database).build();
        return leasehold(
                "Leasehold (" + database.id() + ")",
                database.id(),
                LockService.builder(store).build(),
                store::close); // its release listener stops before the pool closes
    }

    /**
     * The SQL lease store called directly, without the lock service: a try (no wait) and a release
     * per pair, so that the store's own cost per operation can be told apart from the engine's.
     */
    static Contender jdbcStoreOnly(DataSource dataSource, Database database) throws Exception {
        JdbcSchema.create(dataSource, database);
        JdbcLeaseStore store = JdbcLeaseStore.builder(dataSource)
                .database(database)
                .releaseNotifications(false)
                .build();
        return new Contender() {
            @Override
            public String name() {
                return "Leasehold store alone (" + database.id() + ")";
            }

            @Override
            public String backend() {
                return database.id();
            }

            @Override
            public Held tryLock(String key) {
                LockKey lockKey = LockKey.of("bench", key);
                String owner = dev.leasehold.LockOwner.create("bench").token();
                return store.tryAcquire(dev.leasehold.spi.AcquireRequest.once(lockKey, owner, LEASE))
                                instanceof dev.leasehold.spi.AcquireResult.Granted
                        ? () -> store.release(lockKey, owner)
                        : null;
            }

            @Override
            public Held lock(String key, Duration wait) {
                return tryLock(key);
            }

            @Override
            public void close() {
                store.close();
            }
        };
    }

    static Contender springIntegrationJdbc(DataSource dataSource, Database database) throws Exception {
        String script = "/org/springframework/integration/jdbc/schema-"
                + (database == Database.POSTGRESQL ? "postgresql" : "mysql") + ".sql";
        try (Connection c = dataSource.getConnection();
                Statement s = c.createStatement()) {
            boolean exists;
            try (var rs = c.getMetaData()
                    .getTables(null, null, database == Database.POSTGRESQL ? "int_lock" : "INT_LOCK", null)) {
                exists = rs.next();
            }
            if (!exists) {
                for (String sql : new String(
                                Contenders.class.getResourceAsStream(script).readAllBytes(),
                                java.nio.charset.StandardCharsets.UTF_8)
                        .split(";")) {
                    if (sql.contains("INT_LOCK") && sql.trim().toUpperCase().startsWith("CREATE")) {
                        s.execute(sql);
                    }
                }
            }
        }
        DefaultLockRepository repository = new DefaultLockRepository(dataSource);
        repository.setTransactionManager(new DataSourceTransactionManager(dataSource));
        repository.afterPropertiesSet();
        repository.afterSingletonsInstantiated();
        JdbcLockRegistry registry = new JdbcLockRegistry(repository);
        return registryContender("Spring Integration JdbcLockRegistry", database.id(), registry::obtain, () -> {});
    }

    static Contender shedLock(DataSource dataSource, Database database) throws Exception {
        try (Connection c = dataSource.getConnection();
                Statement s = c.createStatement()) {
            s.execute(
                    "CREATE TABLE IF NOT EXISTS shedlock (name VARCHAR(64) NOT NULL PRIMARY KEY, lock_until TIMESTAMP(3) NOT NULL,"
                            + " locked_at TIMESTAMP(3) NOT NULL, locked_by VARCHAR(255) NOT NULL)");
        }
        JdbcTemplateLockProvider provider =
                new JdbcTemplateLockProvider(JdbcTemplateLockProvider.Configuration.builder()
                        .withJdbcTemplate(new JdbcTemplate(dataSource))
                        .usingDbTime()
                        .build());
        return new Contender() {
            @Override
            public String name() {
                return "ShedLock JdbcTemplate";
            }

            @Override
            public String backend() {
                return database.id();
            }

            @Override
            public boolean waits() {
                return false;
            }

            @Override
            public Held tryLock(String key) {
                Optional<SimpleLock> lock =
                        provider.lock(new LockConfiguration(Instant.now(), key, LEASE, Duration.ZERO));
                return lock.<Held>map(l -> l::unlock).orElse(null);
            }

            @Override
            public Held lock(String key, Duration wait) throws Exception {
                return spin(this, key, wait);
            }

            @Override
            public void close() {}
        };
    }

    // ---------------------------------------------------------------- helpers

    static Contender leasehold(String name, String backend, LockService locks, Runnable closer) {
        LeaseOptions noWait = LeaseOptions.builder().leaseFor(LEASE).build();
        return new Contender() {
            @Override
            public String name() {
                return name;
            }

            @Override
            public String backend() {
                return backend;
            }

            @Override
            public Held tryLock(String key) {
                return locks.tryAcquire(LockKey.of("bench", key), noWait)
                        .<Held>map(l -> l::close)
                        .orElse(null);
            }

            @Override
            public Held lock(String key, Duration wait) throws InterruptedException {
                try {
                    Lease lease = locks.acquire(LockKey.of("bench", key), noWait.withWait(wait));
                    return lease::close;
                } catch (dev.leasehold.LockBusyException e) {
                    return null;
                }
            }

            @Override
            public void close() {
                locks.close();
                closer.run();
            }
        };
    }

    private interface Registry {
        Lock obtain(Object key);
    }

    private interface Closer {
        void close() throws Exception;
    }

    private static Contender registryContender(String name, String backend, Registry registry, Closer closer) {
        return new Contender() {
            @Override
            public String name() {
                return name;
            }

            @Override
            public String backend() {
                return backend;
            }

            @Override
            public Held tryLock(String key) {
                Lock lock = registry.obtain(key);
                return lock.tryLock() ? lock::unlock : null;
            }

            @Override
            public Held lock(String key, Duration wait) throws InterruptedException {
                Lock lock = registry.obtain(key);
                return lock.tryLock(wait.toMillis(), TimeUnit.MILLISECONDS) ? lock::unlock : null;
            }

            @Override
            public void close() throws Exception {
                closer.close();
            }
        };
    }

    /** Waiting for a lock that has no waiting of its own: retry every millisecond. */
    static Contender.Held spin(Contender contender, String key, Duration wait) throws Exception {
        long deadline = System.nanoTime() + wait.toNanos();
        while (true) {
            Contender.Held held = contender.tryLock(key);
            if (held != null || System.nanoTime() > deadline) {
                return held;
            }
            Thread.sleep(1);
        }
    }
}
