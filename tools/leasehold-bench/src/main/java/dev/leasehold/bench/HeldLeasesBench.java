package dev.leasehold.bench;

import com.sun.management.OperatingSystemMXBean;
import dev.leasehold.Lease;
import dev.leasehold.LeaseOptions;
import dev.leasehold.LockKey;
import dev.leasehold.LockService;
import dev.leasehold.redis.RedisLeaseStore;
import io.lettuce.core.RedisClient;
import io.lettuce.core.api.StatefulRedisConnection;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.lang.management.ManagementFactory;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
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
 * {@code -Dbench.out} (target/bench; the report is {@code held-leases.md}).
 */
public final class HeldLeasesBench {

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
        StringBuilder report = new StringBuilder("# Holding many leases on Redis\n\n")
                .append("Leases of ")
                .append(leaseMs)
                .append(" ms renewed by the library, held ")
                .append(hold)
                .append(" s; each contender in its own JVM against one private `redis-server`; `")
                .append(Runtime.getRuntime().availableProcessors())
                .append("` cores. CPU is the client process's over the hold; scripts are the server's")
                .append(" `EVAL`/`EVALSHA` calls over the hold.\n\n")
                .append(
                        "| held N | contender | client CPU / hold | share of a core | scripts/s | lost | lowest TTL of a sample |\n")
                .append("|---:|---|---:|---:|---:|---:|---:|\n");
        try (PrivateRedis redis = PrivateRedis.start()) {
            for (int n : counts) {
                for (String contender : List.of("leasehold", "redisson")) {
                    String line = runChild(contender, n, leaseMs, hold, redis.uri);
                    String[] f = line.split(" ");
                    double cpuSeconds = Long.parseLong(f[0]) / 1e9;
                    report.append(String.format(
                            "| %d | %s | %.1f s | %.0f %% | %.0f | %s | %s ms |%n",
                            n,
                            contender.equals("leasehold") ? "Leasehold (Redis)" : "Redisson 3 `RLock`",
                            cpuSeconds,
                            100 * cpuSeconds / hold,
                            Long.parseLong(f[1]) / (double) hold,
                            f[2],
                            f[3]));
                    flush(redis.uri);
                }
            }
        }
        Path out = Path.of(System.getProperty("bench.out", "target/bench"));
        Files.createDirectories(out);
        Files.writeString(out.resolve("held-leases.md"), report.toString());
        System.out.print(report);
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
                try (LockService service = LockService.builder(store).build()) {
                    LeaseOptions options = LeaseOptions.builder()
                            .leaseFor(Duration.ofMillis(leaseMs))
                            .renewal(true)
                            .build();
                    List<Lease> leases = new ArrayList<>(n);
                    for (int i = 0; i < n; i++) {
                        Lease lease = service.tryAcquire(LockKey.of("held", "k" + i), options)
                                .orElseThrow();
                        lease.onLost(e -> lost.incrementAndGet());
                        leases.add(lease);
                    }
                    long cpu0 = cpuNanos();
                    long scripts0 = scripts(admin);
                    long end = System.nanoTime() + TimeUnit.SECONDS.toNanos(hold);
                    while (System.nanoTime() < end) {
                        Thread.sleep(500);
                        for (int i = 0; i < n; i += Math.max(1, n / 50)) {
                            lowestTtl = Math.min(
                                    lowestTtl,
                                    store.inspect(leases.get(i).key())
                                            .map(info -> info.remaining().toMillis())
                                            .orElse(0L));
                        }
                    }
                    cpu = cpuNanos() - cpu0;
                    scripts = scripts(admin) - scripts0;
                    for (Lease lease : leases) {
                        if (!lease.isHeld()) {
                            lost.incrementAndGet();
                        }
                    }
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
}
