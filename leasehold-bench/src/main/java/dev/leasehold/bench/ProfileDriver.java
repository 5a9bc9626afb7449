package dev.leasehold.bench;

import com.zaxxer.hikari.HikariDataSource;
import dev.leasehold.jdbc.Database;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.atomic.AtomicLong;

/**
 * A steady uncontended load for a profiler: lock + unlock of distinct keys, or try-acquire of a key
 * another owner holds, by one contender for a fixed time. Run it under JFR:
 *
 * <pre>
 * java -XX:StartFlightRecording=filename=redis.jfr,settings=profile -cp ... \
 *     dev.leasehold.bench.ProfileDriver leasehold-redis pairs 1 20
 * </pre>
 *
 * Arguments: contender ({@code leasehold-redis}, {@code redis-floor}, {@code leasehold-postgresql},
 * {@code postgresql-floor}, {@code leasehold-mariadb}, {@code mariadb-floor}), {@code pairs} or
 * {@code busy}, threads, seconds. Servers: {@code bench.redis} (redis://127.0.0.1:6379), {@code
 * bench.postgres}, {@code bench.mariadb} (the {@code test} databases).
 */
public final class ProfileDriver {

    private ProfileDriver() {}

    public static void main(String[] args) throws Exception {
        String id = args[0];
        boolean busy = args[1].equals("busy");
        int threads = Integer.parseInt(args[2]);
        double seconds = Double.parseDouble(args[3]);
        String backend = MultiProcessBench.backendOf(id);
        HikariDataSource pool = null;
        Contender contender;
        if (backend.equals("redis")) {
            String uri = System.getProperty("bench.redis", "redis://127.0.0.1:6379");
            contender = id.endsWith("-floor") ? Contenders.rawRedis(uri) : Contenders.leaseholdRedis(uri);
        } else {
            Database database = backend.equals("postgresql") ? Database.POSTGRESQL : Database.MARIADB;
            String url =
                    backend.equals("postgresql") ? MultiProcessBench.adminPostgres() : MultiProcessBench.adminMariadb();
            pool = MultiProcessBench.fixedPool(url, MultiProcessBench.user(backend), threads + 2);
            contender = id.endsWith("-floor")
                    ? Contenders.rawJdbc(pool, database)
                    : Contenders.leaseholdJdbc(pool, database);
        }
        String run = "prof-" + Long.toString(System.currentTimeMillis(), 36);
        List<String> keys = new ArrayList<>();
        for (int t = 0; t < threads; t++) {
            for (int i = 0; i < 64; i++) {
                keys.add(run + "-" + t + "-" + i);
            }
        }
        keys.add(run + "-held");
        contender.prepare(keys);
        Contender.Held held = busy ? contender.tryLock(run + "-held") : null;
        AtomicLong operations = new AtomicLong();
        com.sun.management.OperatingSystemMXBean os = (com.sun.management.OperatingSystemMXBean)
                java.lang.management.ManagementFactory.getOperatingSystemMXBean();
        long cpuBefore = os.getProcessCpuTime();
        long end = System.nanoTime() + (long) (seconds * 1e9);
        List<Thread> workers = new ArrayList<>();
        for (int t = 0; t < threads; t++) {
            int thread = t;
            Thread worker = new Thread(() -> {
                try {
                    int i = 0;
                    while (System.nanoTime() < end) {
                        if (busy) {
                            if (contender.tryLock(run + "-held") != null) {
                                throw new IllegalStateException("a held key was granted");
                            }
                        } else {
                            Contender.Held h =
                                    contender.lock(run + "-" + thread + "-" + (i++ & 63), Duration.ofSeconds(5));
                            h.unlock();
                        }
                        operations.incrementAndGet();
                    }
                } catch (Exception e) {
                    throw new IllegalStateException(e);
                }
            });
            workers.add(worker);
            worker.start();
        }
        for (Thread worker : workers) {
            worker.join();
        }
        if (held != null) {
            held.unlock();
        }
        long cpu = os.getProcessCpuTime() - cpuBefore;
        System.out.printf(
                Locale.ROOT,
                "%s %s %d threads: %.0f ops/s, client CPU %.1f µs per operation (all threads of this JVM)%n",
                contender.name(),
                args[1],
                threads,
                operations.get() / seconds,
                cpu / 1000.0 / Math.max(1, operations.get()));
        contender.close();
        if (pool != null) {
            pool.close();
        }
        System.exit(0);
    }
}
