package dev.leasehold.bench;

import com.sun.management.OperatingSystemMXBean;
import com.zaxxer.hikari.HikariDataSource;
import dev.leasehold.Lease;
import dev.leasehold.LeaseOptions;
import dev.leasehold.LockKey;
import dev.leasehold.LockService;
import dev.leasehold.etcd.EtcdLeaseStore;
import dev.leasehold.jdbc.Database;
import dev.leasehold.jdbc.JdbcLeaseStore;
import dev.leasehold.jdbc.JdbcSchema;
import dev.leasehold.redis.RedisLeaseStore;
import dev.leasehold.spi.LeaseStore;
import dev.leasehold.testkit.EtcdCluster;
import io.etcd.jetcd.Client;
import io.lettuce.core.RedisClient;
import io.lettuce.core.api.StatefulRedisConnection;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.lang.management.ManagementFactory;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.redisson.Redisson;
import org.redisson.api.RLock;
import org.redisson.api.RedissonClient;
import org.redisson.config.Config;

/**
 * The cost of holding many leases: each contender, in a JVM of its own, takes N keys of a private
 * Redis with leases of {@code bench.lease-ms} renewed by the library (Redisson's watchdog set to the
 * same time), holds them for {@code bench.hold} seconds, and reports the client's CPU time and the
 * scripts the server ran over the hold, the leases lost, and the lowest remaining TTL of a sample.
 *
 * <pre>
 * mvn -q -B -pl tools/leasehold-bench -am compile dependency:build-classpath -Dmdep.outputFile=target/cp.txt
 * cd tools/leasehold-bench && java -cp target/classes:$(cat target/cp.txt) dev.leasehold.bench.HeldLeasesBench
 * </pre>
 *
 * {@code -Dbench.held=1000,10000,50000}, {@code -Dbench.hold=30}, {@code -Dbench.lease-ms=6000},
 * {@code -Dbench.out} (target/bench; the report is {@code held-leases.md}), {@code
 * -Dbench.contenders} ({@code leasehold,redisson}; also {@code leasehold-postgresql} and {@code
 * leasehold-mariadb}: the SQL store on database {@value MultiProcessBench#BENCH_DATABASE} of the
 * servers of {@code bench.postgres} and {@code bench.mariadb}, counting the server's committed
 * transactions (PostgreSQL, that database only) or statements (MariaDB, the whole server) in
 * place of scripts; and {@code leasehold-etcd}: the etcd store on a private single-member etcd the
 * bench starts (the {@code etcd} binary, Debian package {@code etcd-server}), counting the gRPC
 * messages etcd received, keep-alives included, from its {@code /metrics}).
 */
public final class HeldLeasesBench {

    private static final String ETCD = "leasehold-etcd";

    private HeldLeasesBench() {}

    public static void main(String[] args) throws Exception {
        if (args.length > 0) {
            child(args[0], Integer.parseInt(args[1]), Long.parseLong(args[2]), Integer.parseInt(args[3]), args[4]);
            return;
        }
        List<Integer> counts = new ArrayList<>();
        for (String n : System.getProperty("bench.held", "1000,10000,50000").split(",")) {
            counts.add(Integer.parseInt(n.trim()));
        }
        int hold = Integer.getInteger("bench.hold", 30);
        long leaseMs = Long.getLong("bench.lease-ms", 6000);
        StringBuilder report = new StringBuilder("# Holding many leases\n\n")
                .append("Leases of ")
                .append(leaseMs)
                .append(" ms renewed by the library, held ")
                .append(hold)
                .append(" s; each contender in its own JVM (Redis contenders against one private `redis-server`); `")
                .append(Runtime.getRuntime().availableProcessors())
                .append("` cores. CPU is the client process's over the hold; server calls are Redis's")
                .append(" `EVAL`/`EVALSHA` calls, PostgreSQL's committed transactions of the bench database,")
                .append(
                        " MariaDB's statements (`Questions`, the whole server), over the hold, less the sample's reads.\n\n")
                .append(
                        "| held N | contender | client CPU / hold | share of a core | server calls/s | lost | lowest TTL of a sample |\n")
                .append("|---:|---|---:|---:|---:|---:|---:|\n");
        List<String> contenders = List.of(
                System.getProperty("bench.contenders", "leasehold,redisson").split(","));
        EtcdCluster etcd = contenders.contains(ETCD)
                ? EtcdCluster.start(1, Duration.ofMillis(100), Duration.ofMillis(1000))
                : null;
        try (PrivateRedis redis = PrivateRedis.start()) {
            for (int n : counts) {
                for (String contender : contenders) {
                    String target = redis.uri;
                    if (contender.equals(ETCD)) {
                        target = etcd.endpoint(0);
                    } else if (contender.startsWith("leasehold-")) {
                        target = prepareDatabase(contender.substring("leasehold-".length()));
                    }
                    String line = runChild(contender, n, leaseMs, hold, target);
                    String[] f = line.split(" ");
                    double cpuSeconds = Long.parseLong(f[0]) / 1e9;
                    report.append(String.format(
                            "| %d | %s | %.1f s | %.0f %% | %.0f | %s | %s ms |%n",
                            n,
                            name(contender),
                            cpuSeconds,
                            100 * cpuSeconds / hold,
                            Long.parseLong(f[1]) / (double) hold,
                            f[2],
                            f[3]));
                    if (!contender.startsWith("leasehold-")) {
                        flush(redis.uri);
                    }
                }
            }
        } finally {
            if (etcd != null) {
                etcd.close();
            }
        }
        Path out = Path.of(System.getProperty("bench.out", "target/bench"));
        Files.createDirectories(out);
        Files.writeString(out.resolve("held-leases.md"), report.toString());
        System.out.print(report);
    }

    private static String name(String contender) {
        return switch (contender) {
            case "leasehold" -> "Leasehold (Redis)";
            case "redisson" -> "Redisson 3 `RLock`";
            case "leasehold-postgresql" -> "Leasehold (PostgreSQL; commits/s)";
            case "leasehold-mariadb" -> "Leasehold (MariaDB; statements/s, whole server)";
            case ETCD -> "Leasehold (etcd; gRPC messages/s)";
            default -> throw new IllegalArgumentException("unknown contender " + contender);
        };
    }

    /** Creates the bench database and its lease tables, emptied; returns its JDBC URL. */
    private static String prepareDatabase(String backend) throws SQLException {
        boolean postgres = backend.equals("postgresql");
        String admin = postgres ? MultiProcessBench.adminPostgres() : MultiProcessBench.adminMariadb();
        try (HikariDataSource pool = MultiProcessBench.fixedPool(admin, MultiProcessBench.user(backend), 1);
                Connection c = pool.getConnection();
                Statement s = c.createStatement()) {
            if (postgres) {
                try (ResultSet row = s.executeQuery(
                        "SELECT 1 FROM pg_database WHERE datname = '" + MultiProcessBench.BENCH_DATABASE + "'")) {
                    if (!row.next()) {
                        s.execute("CREATE DATABASE " + MultiProcessBench.BENCH_DATABASE);
                    }
                }
            } else {
                s.execute("CREATE DATABASE IF NOT EXISTS " + MultiProcessBench.BENCH_DATABASE);
            }
        }
        String url = MultiProcessBench.inBenchDatabase(admin);
        try (HikariDataSource setup = MultiProcessBench.fixedPool(url, MultiProcessBench.user(backend), 1)) {
            JdbcSchema.create(setup, postgres ? Database.POSTGRESQL : Database.MARIADB);
            try (Connection c = setup.getConnection();
                    Statement s = c.createStatement()) {
                s.execute("DELETE FROM leasehold_lease WHERE lock_key LIKE 'held:%'");
            }
        }
        return url;
    }

    /** The server's count of the work the SQL store sends: see the class comment. */
    private static long statements(HikariDataSource pool, boolean postgres) throws SQLException {
        try (Connection c = pool.getConnection();
                Statement s = c.createStatement();
                ResultSet row = s.executeQuery(
                        postgres
                                ? "SELECT xact_commit + xact_rollback FROM pg_stat_database WHERE datname = current_database()"
                                : "SELECT VARIABLE_VALUE FROM information_schema.GLOBAL_STATUS WHERE VARIABLE_NAME = 'QUESTIONS'")) {
            row.next();
            return row.getLong(1);
        }
    }

    private static void flush(String uri) {
        RedisClient client = RedisClient.create(uri);
        try (StatefulRedisConnection<String, String> c = client.connect()) {
            c.sync().flushall();
        } finally {
            client.shutdown();
        }
    }

    private static String runChild(String contender, int n, long leaseMs, int hold, String uri)
            throws IOException, InterruptedException {
        String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
        Process child = new ProcessBuilder(
                        java,
                        "-Xmx1g",
                        "-cp",
                        System.getProperty("java.class.path"),
                        HeldLeasesBench.class.getName(),
                        contender,
                        Integer.toString(n),
                        Long.toString(leaseMs),
                        Integer.toString(hold),
                        uri)
                .redirectErrorStream(true)
                .start();
        String result = null;
        try (BufferedReader out =
                new BufferedReader(new InputStreamReader(child.getInputStream(), StandardCharsets.UTF_8))) {
            for (String line = out.readLine(); line != null; line = out.readLine()) {
                if (line.startsWith("RESULT ")) {
                    result = line.substring("RESULT ".length());
                } else if (line.startsWith("DETAIL ")) {
                    System.out.println(contender + ": " + line.substring("DETAIL ".length()));
                } else if (line.contains("WARN") || line.contains("Exception")) {
                    System.err.println(contender + ": " + line);
                }
            }
        }
        if (child.waitFor() != 0 || result == null) {
            throw new IOException(contender + " with " + n + " leases ended without a result");
        }
        return result;
    }

    /** Scripts the server has run so far. */
    private static long scripts(StatefulRedisConnection<String, String> admin) {
        long calls = 0;
        for (String line : admin.sync().info("commandstats").split("\r?\n")) {
            if (line.startsWith("cmdstat_eval:") || line.startsWith("cmdstat_evalsha:")) {
                String rest = line.substring(line.indexOf("calls=") + "calls=".length());
                calls += Long.parseLong(rest.substring(0, rest.indexOf(',')));
            }
        }
        return calls;
    }

    private static long cpuNanos() {
        return ((OperatingSystemMXBean) ManagementFactory.getOperatingSystemMXBean()).getProcessCpuTime();
    }

    private static void child(String contender, int n, long leaseMs, int hold, String uri) throws Exception {
        if (contender.equals(ETCD)) {
            etcdChild(n, leaseMs, hold, uri);
            System.exit(0);
        }
        if (contender.startsWith("leasehold-")) {
            sqlChild(contender.substring("leasehold-".length()), n, leaseMs, hold, uri);
            System.exit(0);
        }
        RedisClient adminClient = RedisClient.create(uri);
        try (StatefulRedisConnection<String, String> admin = adminClient.connect()) {
            AtomicInteger lost = new AtomicInteger();
            long cpu;
            long scripts;
            long lowestTtl = Long.MAX_VALUE;
            if (contender.equals("leasehold")) {
                RedisClient client = RedisClient.create(uri);
                RedisLeaseStore store =
                        RedisLeaseStore.builder(client).keyPrefix("held:").build();
                try {
                    Held held = holdMany(store, n, leaseMs, hold, () -> scripts(admin));
                    cpu = held.cpuNanos();
                    scripts = held.serverCalls();
                    lost.set(held.lost());
                    lowestTtl = held.lowestTtl();
                } finally {
                    store.close();
                    client.shutdown();
                }
            } else {
                Config config = new Config();
                config.setLockWatchdogTimeout(leaseMs);
                config.useSingleServer().setAddress(uri);
                RedissonClient redisson = Redisson.create(config);
                try {
                    List<RLock> locks = new ArrayList<>(n);
                    for (int i = 0; i < n; i++) {
                        RLock lock = redisson.getLock("held:k" + i);
                        lock.lock();
                        locks.add(lock);
                    }
                    long cpu0 = cpuNanos();
                    long scripts0 = scripts(admin);
                    long end = System.nanoTime() + TimeUnit.SECONDS.toNanos(hold);
                    while (System.nanoTime() < end) {
                        Thread.sleep(500);
                        for (int i = 0; i < n; i += Math.max(1, n / 50)) {
                            lowestTtl =
                                    Math.min(lowestTtl, Math.max(0, locks.get(i).remainTimeToLive()));
                        }
                    }
                    cpu = cpuNanos() - cpu0;
                    scripts = scripts(admin) - scripts0;
                    for (RLock lock : locks) {
                        if (!lock.isHeldByCurrentThread()) {
                            lost.incrementAndGet();
                        }
                    }
                } finally {
                    redisson.shutdown();
                }
            }
            System.out.println("RESULT " + cpu + " " + scripts + " " + lost.get() + " " + lowestTtl);
        } finally {
            adminClient.shutdown();
        }
        System.exit(0);
    }

    private static void sqlChild(String backend, int n, long leaseMs, int hold, String url) throws Exception {
        boolean postgres = backend.equals("postgresql");
        try (HikariDataSource pool = MultiProcessBench.fixedPool(url, MultiProcessBench.user(backend), 8);
                HikariDataSource counting = MultiProcessBench.fixedPool(url, MultiProcessBench.user(backend), 1)) {
            JdbcLeaseStore store = JdbcLeaseStore.builder(pool)
                    .database(postgres ? Database.POSTGRESQL : Database.MARIADB)
                    .build();
            Held held;
            try {
                held = holdMany(store, n, leaseMs, hold, () -> statements(counting, postgres));
            } finally {
                store.close();
            }
            // the sample's reads are the bench's, not the store's renewals
            long statements = held.serverCalls() - held.sampled();
            System.out.println("RESULT " + held.cpuNanos() + " " + Math.max(0, statements) + " " + held.lost() + " "
                    + held.lowestTtl());
        }
    }

    private static void etcdChild(int n, long leaseMs, int hold, String endpoint) throws Exception {
        Client client = Client.builder().endpoints(endpoint).build();
        try {
            EtcdLeaseStore store = EtcdLeaseStore.builder(client).build();
            Held held;
            Map<String, Long> before = grpcMessages(endpoint);
            try {
                held = holdMany(store, n, leaseMs, hold, () -> grpcMessages(endpoint).values().stream()
                        .mapToLong(Long::longValue)
                        .sum());
            } finally {
                store.close();
            }
            Map<String, Long> after = grpcMessages(endpoint);
            after.forEach((method, count) -> System.out.println("DETAIL etcd " + method
                    + " messages, taking and holding: " + (count - before.getOrDefault(method, 0L))));
            // the sample's reads are the bench's, not the store's renewals: a sampled inspect is a
            // Range and a LeaseTimeToLive
            long messages = held.serverCalls() - 2 * held.sampled();
            System.out.println("RESULT " + held.cpuNanos() + " " + Math.max(0, messages) + " " + held.lost() + " "
                    + held.lowestTtl());
        } finally {
            client.close();
        }
    }

    /** The gRPC messages etcd has received so far, by method, from its Prometheus metrics. */
    private static Map<String, Long> grpcMessages(String endpoint) throws IOException, InterruptedException {
        HttpResponse<String> metrics = HttpClient.newHttpClient()
                .send(
                        HttpRequest.newBuilder(URI.create(endpoint + "/metrics"))
                                .build(),
                        HttpResponse.BodyHandlers.ofString());
        Map<String, Long> byMethod = new TreeMap<>();
        for (String line : metrics.body().split("\n")) {
            if (line.startsWith("grpc_server_msg_received_total{")) {
                int at = line.indexOf("grpc_method=\"") + "grpc_method=\"".length();
                String method = line.substring(at, line.indexOf('"', at));
                long count = (long) Double.parseDouble(line.substring(line.lastIndexOf(' ') + 1));
                byMethod.merge(method, count, Long::sum);
            }
        }
        return byMethod;
    }

    /** What holding N leases cost: CPU and server calls over the hold, and the sample's reads among them. */
    private record Held(long cpuNanos, long serverCalls, long sampled, int lost, long lowestTtl) {}

    /** A call that reads the server's count of the work done so far. */
    private interface ServerCount {
        long read() throws Exception;
    }

    /**
     * Takes N keys through Leasehold with renewed leases, holds them, samples the lowest remaining
     * TTL with the store's {@code inspect} every 500 ms (pacing, not synchronisation), and counts
     * the leases lost.
     */
    private static Held holdMany(LeaseStore store, int n, long leaseMs, int hold, ServerCount server) throws Exception {
        AtomicInteger lost = new AtomicInteger();
        long lowestTtl = Long.MAX_VALUE;
        long sampled = 0;
        try (LockService service = LockService.builder(store).build()) {
            LeaseOptions options = LeaseOptions.builder()
                    .leaseFor(Duration.ofMillis(leaseMs))
                    .renewal(true)
                    .build();
            List<Lease> leases = new ArrayList<>(n);
            long taking = System.nanoTime();
            for (int i = 0; i < n; i++) {
                Lease lease =
                        service.tryAcquire(LockKey.of("held", "k" + i), options).orElseThrow();
                lease.onLost(e -> lost.incrementAndGet());
                leases.add(lease);
            }
            System.out.printf(
                    "DETAIL took %d keys in %.1f s; %d lost meanwhile%n",
                    n, (System.nanoTime() - taking) / 1e9, lost.get());
            long cpu0 = cpuNanos();
            long calls0 = server.read();
            long end = System.nanoTime() + TimeUnit.SECONDS.toNanos(hold);
            while (System.nanoTime() < end) {
                Thread.sleep(500);
                for (int i = 0; i < n; i += Math.max(1, n / 50)) {
                    sampled++;
                    lowestTtl = Math.min(
                            lowestTtl,
                            store.inspect(leases.get(i).key())
                                    .map(info -> info.remaining().toMillis())
                                    .orElse(0L));
                }
            }
            long cpu = cpuNanos() - cpu0;
            long calls = server.read() - calls0;
            for (Lease lease : leases) {
                if (!lease.isHeld()) {
                    lost.incrementAndGet();
                }
            }
            return new Held(cpu, calls, sampled, lost.get(), lowestTtl);
        }
    }
}
