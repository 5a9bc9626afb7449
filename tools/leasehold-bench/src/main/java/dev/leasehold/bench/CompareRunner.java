package dev.leasehold.bench;

import com.zaxxer.hikari.HikariDataSource;
import dev.leasehold.jdbc.Database;
import io.lettuce.core.RedisClient;
import io.lettuce.core.api.StatefulRedisConnection;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.LocalDateTime;
import java.time.format.DateTimeFormatter;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.Supplier;

/**
 * Runs the same scenarios, in one JVM, against the same local Redis, PostgreSQL and MariaDB, for
 * Leasehold, Redisson, Spring Integration, ShedLock and the raw floors, and writes a markdown report
 * with ratios and an SVG chart under {@code docs/bench/}.
 *
 * <pre>
 * mvn -q -B install -DskipTests &amp;&amp; mvn -q -B -pl tools/leasehold-bench exec:java
 * </pre>
 *
 * Settings (system properties): {@code bench.redis} (redis://127.0.0.1:6379), {@code bench.postgres}
 * (jdbc:postgresql://127.0.0.1:5432/test, user postgres), {@code bench.mariadb}
 * (jdbc:mariadb://127.0.0.1:3306/test, user root), {@code bench.scale} (1.0; fewer operations below
 * 1), {@code bench.out} (docs/bench), {@code bench.backends} (all; or a list such as {@code
 * postgresql,mariadb}).
 */
public final class CompareRunner {

    private static final int THREADS = 8;

    /** One measured figure set. */
    record Result(
            String scenario,
            String contender,
            String backend,
            boolean floor,
            double opsPerSecond,
            double p50Micros,
            double p99Micros,
            String extra) {}

    private final double scale = Double.parseDouble(System.getProperty("bench.scale", "1.0"));
    private final String run = Long.toString(System.currentTimeMillis(), 36);
    private final List<Result> results = new ArrayList<>();
    private final Map<String, String> counts = new TreeMap<>();

    public static void main(String[] args) throws Exception {
        new CompareRunner().runAll();
        System.exit(0);
    }

    private int n(int base) {
        return Math.max(20, (int) (base * scale));
    }

    void runAll() throws Exception {
        String redisUri = System.getProperty("bench.redis", "redis://127.0.0.1:6379");
        java.net.URI parsed = java.net.URI.create(redisUri);
        String pgUrl = System.getProperty("bench.postgres", "jdbc:postgresql://127.0.0.1:5432/test");
        String mariaUrl = System.getProperty("bench.mariadb", "jdbc:mariadb://127.0.0.1:3306/test");

        try (HikariDataSource pgPool = Contenders.pool(pgUrl, "postgres", "");
                HikariDataSource mariaPool = Contenders.pool(mariaUrl, "root", "")) {
            CountingDataSource pg = new CountingDataSource(pgPool);
            CountingDataSource maria = new CountingDataSource(mariaPool);
            List<Supplier<Contender>> all = List.of(
                    () -> Contenders.rawRedis(redisUri),
                    () -> Contenders.leaseholdRedis(redisUri),
                    () -> Contenders.redisson(redisUri, false),
                    () -> Contenders.redisson(redisUri, true),
                    () -> Contenders.redissonFair(redisUri),
                    () -> Contenders.springIntegrationRedis(parsed.getHost(), parsed.getPort(), false),
                    () -> Contenders.springIntegrationRedis(parsed.getHost(), parsed.getPort(), true),
                    () -> unchecked(() -> Contenders.rawJdbc(pg, Database.POSTGRESQL)),
                    () -> unchecked(() -> Contenders.leaseholdJdbc(pg, Database.POSTGRESQL)),
                    () -> unchecked(() -> Contenders.springIntegrationJdbc(pg, Database.POSTGRESQL)),
                    () -> unchecked(() -> Contenders.shedLock(pg, Database.POSTGRESQL)),
                    () -> unchecked(() -> Contenders.rawJdbc(maria, Database.MARIADB)),
                    () -> unchecked(() -> Contenders.leaseholdJdbc(maria, Database.MARIADB)));
            // -Dbench.backends=postgresql,mariadb runs the contenders of those backends only
            String only = System.getProperty("bench.backends", "");
            int redisContenders = 7;
            List<Supplier<Contender>> chosen = new ArrayList<>();
            for (int i = 0; i < all.size(); i++) {
                String backend = i < redisContenders ? "redis" : i < redisContenders + 4 ? "postgresql" : "mariadb";
                if (only.isEmpty() || Arrays.asList(only.split(",")).contains(backend)) {
                    chosen.add(all.get(i));
                }
            }
            RedisClient statsClient = RedisClient.create(redisUri);
            try (StatefulRedisConnection<String, String> stats = statsClient.connect()) {
                for (Supplier<Contender> supplier : chosen) {
                    Contender contender;
                    try {
                        contender = supplier.get();
                    } catch (RuntimeException e) {
                        System.out.println("skipped a contender that could not start: " + e);
                        continue;
                    }
                    try (contender) {
                        System.out.println("== " + contender.name() + " on " + contender.backend());
                        measure(contender, stats, contender.backend().equals("postgresql") ? pg : maria);
                    }
                }
            } finally {
                statsClient.shutdown();
            }
        }
        write();
    }

    private interface Risky<T> {
        T get() throws Exception;
    }

    private static <T> T unchecked(Risky<T> risky) {
        try {
            return risky.get();
        } catch (Exception e) {
            throw new IllegalStateException(e);
        }
    }

    private void measure(Contender c, StatefulRedisConnection<String, String> stats, CountingDataSource sql)
            throws Exception {
        boolean redis = c.backend().equals("redis");
        int single = n(redis ? 2000 : 800);
        // warm-up, then two passes; the second pass is reported
        pairs(c, "warm", 1, n(redis ? 500 : 200));
        pairs(c, "p1", 1, single);
        Object before = redis ? redisCounts(stats) : new long[] {sql.statements.get(), sql.commits.get()};
        Result a = pairs(c, "a", 1, single);
        Object after = redis ? redisCounts(stats) : new long[] {sql.statements.get(), sql.commits.get()};
        counts.put(c.name() + " | " + c.backend(), perPair(before, after, single));
        results.add(a);
        pairs(c, "p1b", THREADS, n(redis ? 400 : 150));
        results.add(pairs(c, "b", THREADS, n(redis ? 400 : 150)));
        if (c.waits()) {
            handOffs(c, "p1c", n(150));
            results.add(handOffs(c, "c", n(redis ? 400 : 200)));
        }
        busy(c, "p1d", n(300));
        results.add(busy(c, "d", n(redis ? 2000 : 800)));
    }

    /** (a) and (b): lock + unlock pairs on distinct keys. */
    private Result pairs(Contender c, String pass, int threads, int perThread) throws Exception {
        long[][] latencies = new long[threads][perThread];
        List<String> keys = new ArrayList<>();
        for (int t = 0; t < threads; t++) {
            for (int i = 0; i < Math.min(perThread, 256); i++) {
                keys.add(run + "-" + pass + "-" + t + "-" + i);
            }
        }
        c.prepare(keys);
        CyclicBarrier start = new CyclicBarrier(threads);
        ExecutorService pool = Executors.newFixedThreadPool(threads);
        long began;
        AtomicReference<Long> t0 = new AtomicReference<>();
        try {
            List<Future<?>> done = new ArrayList<>();
            for (int t = 0; t < threads; t++) {
                int thread = t;
                done.add(pool.submit(() -> {
                    start.await();
                    t0.compareAndSet(null, System.nanoTime());
                    for (int i = 0; i < perThread; i++) {
                        String key = run + "-" + pass + "-" + thread + "-" + (i % 256);
                        long s = System.nanoTime();
                        // The waiting acquire: uncontended it returns at once everywhere, and it absorbs
                        // libraries whose release becomes visible a moment after unlock returns.
                        Contender.Held held = c.lock(key, Duration.ofSeconds(5));
                        if (held == null) {
                            throw new IllegalStateException(c.name() + ": distinct key " + key + " stayed busy");
                        }
                        held.unlock();
                        latencies[thread][i] = System.nanoTime() - s;
                    }
                    return null;
                }));
            }
            for (Future<?> f : done) {
                f.get(5, TimeUnit.MINUTES);
            }
            began = t0.get();
        } finally {
            pool.shutdownNow();
        }
        double seconds = (System.nanoTime() - began) / 1e9;
        long[] all =
                Arrays.stream(latencies).flatMapToLong(Arrays::stream).sorted().toArray();
        return new Result(
                threads == 1 ? "a" : "b",
                c.name(),
                c.backend(),
                c.floor(),
                all.length / seconds,
                percentile(all, 0.50),
                percentile(all, 0.99),
                "");
    }

    /** (c): 8 threads on one key, 1 ms inside. */
    private Result handOffs(Contender c, String pass, int total) throws Exception {
        String key = run + "-" + pass + "-hot";
        c.prepare(List.of(key));
        AtomicInteger remaining = new AtomicInteger(total);
        AtomicInteger changes = new AtomicInteger();
        AtomicInteger lastOwner = new AtomicInteger(-1);
        int[] perThread = new int[THREADS];
        List<Long> waits = java.util.Collections.synchronizedList(new ArrayList<>());
        CyclicBarrier start = new CyclicBarrier(THREADS);
        ExecutorService pool = Executors.newFixedThreadPool(THREADS);
        long began = System.nanoTime();
        try {
            List<Future<?>> done = new ArrayList<>();
            for (int t = 0; t < THREADS; t++) {
                int thread = t;
                done.add(pool.submit(() -> {
                    start.await();
                    while (remaining.get() > 0) {
                        long s = System.nanoTime();
                        Contender.Held held = c.lock(key, Duration.ofSeconds(30));
                        if (held == null) {
                            continue;
                        }
                        waits.add(System.nanoTime() - s);
                        try {
                            if (lastOwner.getAndSet(thread) != thread) {
                                changes.incrementAndGet();
                            }
                            perThread[thread]++;
                            remaining.decrementAndGet();
                            Thread.sleep(1);
                        } finally {
                            held.unlock();
                        }
                    }
                    return null;
                }));
            }
            for (Future<?> f : done) {
                f.get(5, TimeUnit.MINUTES);
            }
        } finally {
            pool.shutdownNow();
        }
        double seconds = (System.nanoTime() - began) / 1e9;
        long[] sorted = waits.stream().mapToLong(Long::longValue).sorted().toArray();
        int min = Arrays.stream(perThread).min().orElse(0);
        int max = Arrays.stream(perThread).max().orElse(0);
        return new Result(
                "c",
                c.name(),
                c.backend(),
                c.floor(),
                sorted.length / seconds,
                percentile(sorted, 0.50),
                percentile(sorted, 0.99),
                String.format(
                        Locale.ROOT,
                        "owner changes %.0f/s, per thread min/max %d/%d",
                        changes.get() / seconds,
                        min,
                        max));
    }

    /** (d): try-acquire of a key another owner holds. */
    private Result busy(Contender c, String pass, int tries) throws Exception {
        String key = run + "-" + pass + "-held";
        c.prepare(List.of(key));
        ExecutorService holder = Executors.newSingleThreadExecutor();
        try {
            Contender.Held held = holder.submit(() -> c.tryLock(key)).get();
            long[] latencies = new long[tries];
            long began = System.nanoTime();
            for (int i = 0; i < tries; i++) {
                long s = System.nanoTime();
                if (c.tryLock(key) != null) {
                    throw new IllegalStateException(c.name() + ": a held key was granted");
                }
                latencies[i] = System.nanoTime() - s;
            }
            double seconds = (System.nanoTime() - began) / 1e9;
            holder.submit(() -> {
                        held.unlock();
                        return null;
                    })
                    .get();
            Arrays.sort(latencies);
            return new Result(
                    "d",
                    c.name(),
                    c.backend(),
                    c.floor(),
                    tries / seconds,
                    percentile(latencies, 0.5),
                    percentile(latencies, 0.99),
                    "");
        } finally {
            holder.shutdownNow();
        }
    }

    private static double percentile(long[] sorted, double p) {
        if (sorted.length == 0) {
            return 0;
        }
        return sorted[Math.min(sorted.length - 1, (int) Math.ceil(p * sorted.length) - 1)] / 1000.0;
    }

    // ---------------------------------------------------------------- server counts (e)

    private static Map<String, Long> redisCounts(StatefulRedisConnection<String, String> stats) {
        Map<String, Long> calls = new TreeMap<>();
        for (String line : stats.sync().info("commandstats").split("\r?\n")) {
            if (line.startsWith("cmdstat_")) {
                String name = line.substring(8, line.indexOf(':'));
                String value = line.substring(line.indexOf("calls=") + 6, line.indexOf(',', line.indexOf("calls=")));
                calls.put(name, Long.parseLong(value));
            }
        }
        return calls;
    }

    @SuppressWarnings("unchecked")
    private static String perPair(Object before, Object after, int pairs) {
        if (before instanceof long[] counted) {
            long[] now = (long[]) after;
            return String.format(
                    Locale.ROOT,
                    "%.2f statements, %.2f explicit commits (counted on the client)",
                    (now[0] - counted[0]) / (double) pairs,
                    (now[1] - counted[1]) / (double) pairs);
        }
        Map<String, Long> b = (Map<String, Long>) before;
        Map<String, Long> a = (Map<String, Long>) after;
        StringBuilder sb = new StringBuilder();
        for (var e : a.entrySet()) {
            long delta = e.getValue() - b.getOrDefault(e.getKey(), 0L);
            double per = delta / (double) pairs;
            if (per >= 0.05 && !e.getKey().startsWith("info")) {
                sb.append(sb.length() == 0 ? "" : ", ").append(String.format(Locale.ROOT, "%s %.2f", e.getKey(), per));
            }
        }
        return sb.toString();
    }

    // ---------------------------------------------------------------- report

    private void write() throws IOException {
        Path out = Path.of(System.getProperty("bench.out", "docs/bench"));
        Files.createDirectories(out);
        StringBuilder md = new StringBuilder();
        md.append("# Lock libraries side by side\n\n")
                .append("Run ")
                .append(LocalDateTime.now().format(DateTimeFormatter.ISO_LOCAL_DATE_TIME))
                .append(" on ")
                .append(Runtime.getRuntime().availableProcessors())
                .append(" cores, Java ")
                .append(System.getProperty("java.version"))
                .append(", scale ")
                .append(scale)
                .append(". Same JVM, same local servers; warm-up, then two passes, the second reported. ")
                .append("Ratios compare with the raw floor of the same backend and with Leasehold on it.\n\n");
        Map<String, String> titles = new LinkedHashMap<>();
        titles.put("a", "(a) lock + unlock, 1 thread, distinct keys: pairs/s");
        titles.put("b", "(b) lock + unlock, 8 threads, distinct keys: pairs/s");
        titles.put("c", "(c) 8 threads on ONE key, 1 ms inside: hand-offs/s, wait to acquire");
        titles.put("d", "(d) busy path, try-acquire of a held key: tries/s");
        for (var title : titles.entrySet()) {
            md.append("## ").append(title.getValue()).append("\n\n");
            md.append("| backend | contender | ops/s | p50 µs | p99 µs | × floor | × Leasehold | notes |\n");
            md.append("|---|---|---:|---:|---:|---:|---:|---|\n");
            for (Result r : results) {
                if (!r.scenario().equals(title.getKey())) {
                    continue;
                }
                Result floor = find(title.getKey(), r.backend(), true);
                Result leasehold = findLeasehold(title.getKey(), r.backend());
                md.append(String.format(
                        Locale.ROOT,
                        "| %s | %s | %.0f | %.0f | %.0f | %s | %s | %s |\n",
                        r.backend(),
                        r.contender(),
                        r.opsPerSecond(),
                        r.p50Micros(),
                        r.p99Micros(),
                        ratio(r, floor),
                        ratio(r, leasehold),
                        r.extra()));
            }
            md.append('\n');
        }
        md.append(
                "## (e) server work per lock + unlock (scenario a)\n\n| contender | backend | per pair |\n|---|---|---|\n");
        counts.forEach((k, v) -> {
            String[] parts = k.split(" \\| ");
            md.append("| ")
                    .append(parts[0])
                    .append(" | ")
                    .append(parts[1])
                    .append(" | ")
                    .append(v)
                    .append(" |\n");
        });
        Files.writeString(out.resolve("latest.md"), md.toString());
        Files.writeString(out.resolve("latest.svg"), svg());
        System.out.println(md);
        System.out.println("written to " + out.toAbsolutePath());
    }

    private Result find(String scenario, String backend, boolean floor) {
        return results.stream()
                .filter(r -> r.scenario().equals(scenario) && r.backend().equals(backend) && r.floor() == floor)
                .findFirst()
                .orElse(null);
    }

    private Result findLeasehold(String scenario, String backend) {
        return results.stream()
                .filter(r -> r.scenario().equals(scenario)
                        && r.backend().equals(backend)
                        && r.contender().startsWith("Leasehold"))
                .findFirst()
                .orElse(null);
    }

    private static String ratio(Result r, Result base) {
        return base == null || base.opsPerSecond() == 0
                ? ""
                : String.format(Locale.ROOT, "%.2f", r.opsPerSecond() / base.opsPerSecond());
    }

    /** A grouped bar chart of scenario (a) and (b) throughput, as plain SVG. */
    private String svg() {
        List<Result> bars = results.stream()
                .filter(r -> r.scenario().equals("a") || r.scenario().equals("b"))
                .toList();
        double max = bars.stream().mapToDouble(Result::opsPerSecond).max().orElse(1);
        int rowHeight = 18;
        int width = 900;
        int labelWidth = 420;
        StringBuilder svg = new StringBuilder();
        svg.append(String.format(
                Locale.ROOT,
                "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" font-family=\"sans-serif\" font-size=\"12\">\n",
                width,
                40 + bars.size() * rowHeight));
        svg.append(
                "<text x=\"10\" y=\"20\" font-size=\"14\">lock + unlock pairs/s: (a) 1 thread, (b) 8 threads, distinct keys</text>\n");
        int y = 34;
        for (Result r : bars) {
            double w = (width - labelWidth - 80) * r.opsPerSecond() / max;
            String color = r.contender().startsWith("Leasehold") ? "#2b7a3d" : r.floor() ? "#888888" : "#4a6fa5";
            svg.append(String.format(
                    Locale.ROOT,
                    "<text x=\"10\" y=\"%d\">(%s) %s, %s</text><rect x=\"%d\" y=\"%d\" width=\"%.1f\" height=\"13\" fill=\"%s\"/>"
                            + "<text x=\"%.1f\" y=\"%d\">%.0f</text>\n",
                    y + 11,
                    r.scenario(),
                    escape(r.contender()),
                    r.backend(),
                    labelWidth,
                    y,
                    w,
                    color,
                    labelWidth + w + 4,
                    y + 11,
                    r.opsPerSecond()));
            y += rowHeight;
        }
        return svg.append("</svg>\n").toString();
    }

    private static String escape(String text) {
        return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;");
    }
}
