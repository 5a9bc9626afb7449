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
 * Arguments: contender ({@code leasehold-redis}, {@code leasehold-redis-fair}, {@code
 * leasehold-redis-barging}, {@code redis-floor}, {@code leasehold-postgresql},
 * {@code postgresql-floor}, {@code leasehold-mariadb}, {@code mariadb-floor}; {@code store-postgresql},
 * {@code store-mariadb}: the SQL store alone, without the lock service), {@code pairs} or
 * {@code busy}, threads, seconds measured after {@code bench.warmup} seconds (4). Servers: {@code bench.redis} (redis://127.0.0.1:6379), {@code
 * bench.postgres}, {@code bench.mariadb} (the {@code test} databases).
 */
public final class ProfileDriver {

    private ProfileDriver() {}

    private static long gcMillis() {
        long total = 0;
        for (var gc : java.lang.management.ManagementFactory.getGarbageCollectorMXBeans()) {
            total += Math.max(0, gc.getCollectionTime());
        }
        return total;
    }

    /** CPU time of the live Java threads, summed by name with digits dropped. */
    private static java.util.Map<String, Long> threadCpu() {
        java.lang.management.ThreadMXBean threads = java.lang.management.ManagementFactory.getThreadMXBean();
        java.util.Map<String, Long> byGroup = new java.util.TreeMap<>();
        for (long id : threads.getAllThreadIds()) {
            java.lang.management.ThreadInfo info = threads.getThreadInfo(id);
            long cpu = threads.getThreadCpuTime(id);
            if (info != null && cpu > 0) {
                byGroup.merge(info.getThreadName().replaceAll("[0-9]+", "N"), cpu, Long::sum);
            }
        }
        return byGroup;
    }

    /** Bytes allocated by the live Java threads, summed by name with digits dropped. */
    private static java.util.Map<String, Long> threadAllocated() {
        com.sun.management.ThreadMXBean threads =
                (com.sun.management.ThreadMXBean) java.lang.management.ManagementFactory.getThreadMXBean();
        java.util.Map<String, Long> byGroup = new java.util.TreeMap<>();
        for (long id : threads.getAllThreadIds()) {
            java.lang.management.ThreadInfo info = threads.getThreadInfo(id);
            long bytes = threads.getThreadAllocatedBytes(id);
            if (info != null && bytes > 0) {
                byGroup.merge(info.getThreadName().replaceAll("[0-9]+", "N"), bytes, Long::sum);
            }
        }
        return byGroup;
    }

    private static long currentThreadAllocated() {
        return ((com.sun.management.ThreadMXBean) java.lang.management.ManagementFactory.getThreadMXBean())
                .getCurrentThreadAllocatedBytes();
    }

    public static void main(String[] args) throws Exception {
        String id = args[0];
        boolean busy = args[1].equals("busy");
        int threads = Integer.parseInt(args[2]);
        double seconds = Double.parseDouble(args[3]);
        String backend = MultiProcessBench.backendOf(id);
        HikariDataSource pool = null;
        long transactionsBefore = 0;
        Contender contender;
        if (backend.equals("redis")) {
            String uri = System.getProperty("bench.redis", "redis://127.0.0.1:6379");
            contender = id.endsWith("-floor")
                    ? Contenders.rawRedis(uri)
                    : id.endsWith("-fair")
                            ? Contenders.leaseholdRedisFair(uri, java.time.Duration.ofSeconds(5))
                            : id.endsWith("-barging")
                                    ? Contenders.leaseholdRedisBarging(uri)
                                    : Contenders.leaseholdRedis(uri);
        } else {
            Database database = backend.equals("postgresql") ? Database.POSTGRESQL : Database.MARIADB;
            String url =
                    backend.equals("postgresql") ? MultiProcessBench.adminPostgres() : MultiProcessBench.adminMariadb();
            if (backend.equals("postgresql")) {
                String dbName = url.substring(url.lastIndexOf('/') + 1).replaceFirst("\\?.*", "");
                try (HikariDataSource admin = MultiProcessBench.fixedPool(url, "postgres", 1)) {
                    transactionsBefore = ServerCounts.settledTransactions(admin, dbName);
                }
            }
            pool = MultiProcessBench.fixedPool(url, MultiProcessBench.user(backend), threads + 2);
            contender = id.endsWith("-floor")
                    ? Contenders.rawJdbc(pool, database)
                    : id.startsWith("store-")
                            ? Contenders.jdbcStoreOnly(pool, database)
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
        // pairs by try-lock (no wait) instead of a waiting lock: the engine's uncontended paths differ
        boolean noWait = Boolean.getBoolean("bench.noWait");
        AtomicLong operations = new AtomicLong();
        AtomicLong workerCpuAtEnd = new AtomicLong();
        AtomicLong workerAllocatedAtEnd = new AtomicLong();
        com.sun.management.OperatingSystemMXBean os = (com.sun.management.OperatingSystemMXBean)
                java.lang.management.ManagementFactory.getOperatingSystemMXBean();
        double warmup = Double.parseDouble(System.getProperty("bench.warmup", "4"));
        long end = System.nanoTime() + (long) ((warmup + seconds) * 1e9);
        List<Thread> workers = new ArrayList<>();
        for (int t = 0; t < threads; t++) {
            int thread = t;
            Thread worker = new Thread("callers-" + t) {
                @Override
                public void run() {
                    try {
                        int i = 0;
                        while (System.nanoTime() < end) {
                            if (busy) {
                                if (contender.tryLock(run + "-held") != null) {
                                    throw new IllegalStateException("a held key was granted");
                                }
                            } else {
                                String key = run + "-" + thread + "-" + (i++ & 63);
                                Contender.Held h =
                                        noWait ? contender.tryLock(key) : contender.lock(key, Duration.ofSeconds(5));
                                h.unlock();
                            }
                            operations.incrementAndGet();
                        }
                        workerAllocatedAtEnd.addAndGet(currentThreadAllocated());
                        workerCpuAtEnd.addAndGet(java.lang.management.ManagementFactory.getThreadMXBean()
                                .getCurrentThreadCpuTime());
                    } catch (Exception e) {
                        throw new IllegalStateException(e);
                    }
                }
            };
            workers.add(worker);
            worker.start();
        }
        // measure after the warm-up (JIT compilation is not per-operation work)
        Thread.sleep((long) (warmup * 1000));
        long cpuBefore = os.getProcessCpuTime();
        java.util.Map<String, Long> threadsBefore = threadCpu();
        java.util.Map<String, Long> allocatedBefore = threadAllocated();
        allocatedBefore.put("callers", allocatedBefore.getOrDefault("callers-N", 0L));
        threadsBefore.put("callers", threadsBefore.getOrDefault("callers-N", 0L));
        long gcBefore = gcMillis();
        long operationsBefore = operations.get();
        long measureStart = System.nanoTime();
        for (Thread worker : workers) {
            worker.join();
        }
        long measured = operations.get() - operationsBefore;
        // the callers have ended: their allocation was taken as each ended
        double measuredSeconds = (System.nanoTime() - measureStart) / 1e9;
        if (held != null) {
            held.unlock();
        }
        long cpu = os.getProcessCpuTime() - cpuBefore;
        java.util.Map<String, Long> threadsAfter = threadCpu();
        java.util.Map<String, Long> allocatedAfter = threadAllocated();
        allocatedAfter.put("callers", workerAllocatedAtEnd.get());
        allocatedAfter.remove("callers-N");
        allocatedBefore.remove("callers-N");
        threadsAfter.put("callers", workerCpuAtEnd.get());
        threadsAfter.remove("callers-N");
        threadsBefore.remove("callers-N");
        long gc = gcMillis() - gcBefore;
        long javaThreads = 0;
        StringBuilder perThread = new StringBuilder();
        for (var e : threadsAfter.entrySet()) {
            long d = e.getValue() - threadsBefore.getOrDefault(e.getKey(), 0L);
            javaThreads += d;
            if (d > 0) {
                perThread.append(
                        String.format(Locale.ROOT, " %s %.1f", e.getKey(), d / 1000.0 / Math.max(1, measured)));
            }
        }
        System.out.printf(
                Locale.ROOT,
                "%s %s %d threads: %.0f ops/s, client CPU %.1f µs per operation (all threads of this JVM)%n",
                contender.name(),
                args[1],
                threads,
                measured / measuredSeconds,
                cpu / 1000.0 / Math.max(1, measured));
        System.out.printf(
                Locale.ROOT,
                "  µs per operation by thread group:%s; JVM-internal (GC, JIT) %.1f; GC pauses %d ms%n",
                perThread,
                (cpu - javaThreads) / 1000.0 / Math.max(1, measured),
                gc);
        long allocatedTotal = 0;
        StringBuilder allocatedPerThread = new StringBuilder();
        for (var e : allocatedAfter.entrySet()) {
            long d = e.getValue() - allocatedBefore.getOrDefault(e.getKey(), 0L);
            if (d > 0) {
                allocatedTotal += d;
                allocatedPerThread.append(
                        String.format(Locale.ROOT, " %s %.0f", e.getKey(), d / (double) Math.max(1, measured)));
            }
        }
        System.out.printf(
                Locale.ROOT,
                "  bytes allocated per operation: %.0f; by thread group:%s%n",
                allocatedTotal / (double) Math.max(1, measured),
                allocatedPerThread);
        long mariaDbStatements = -1;
        if (backend.equals("mariadb")) {
            mariaDbStatements = id.endsWith("-floor")
                    ? contender.sessionStatements()
                    : SessionCounts.poolStatements(pool, threads + 2, Database.MARIADB);
        }
        contender.close();
        if (pool != null) {
            pool.close();
        }
        long total = operations.get();
        if (backend.equals("postgresql")) {
            // PostgreSQL counts transactions per database; its backends report them when they exit.
            String url = MultiProcessBench.adminPostgres();
            String database = url.substring(url.lastIndexOf('/') + 1).replaceFirst("\\?.*", "");
            try (HikariDataSource admin = MultiProcessBench.fixedPool(url, "postgres", 1)) {
                long transactions = ServerCounts.settledTransactions(admin, database) - transactionsBefore;
                System.out.printf(
                        Locale.ROOT,
                        "  server: %d transactions in database %s for %d operations (%.2f each, whole run)%n",
                        transactions,
                        database,
                        total,
                        transactions / (double) Math.max(1, total));
            }
        } else if (mariaDbStatements >= 0) {
            System.out.printf(
                    Locale.ROOT,
                    "  server: %d statements (session Questions) for %d operations (%.2f each, whole run)%n",
                    mariaDbStatements,
                    total,
                    mariaDbStatements / (double) Math.max(1, total));
        }
        System.exit(0);
    }
}
