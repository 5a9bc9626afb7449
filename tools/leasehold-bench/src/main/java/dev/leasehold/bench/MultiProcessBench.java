package dev.leasehold.bench;

import com.zaxxer.hikari.HikariDataSource;
import dev.leasehold.LockService;
import dev.leasehold.jdbc.Database;
import dev.leasehold.jdbc.JdbcLeaseStore;
import dev.leasehold.jdbc.JdbcSchema;
import io.lettuce.core.RedisClient;
import io.lettuce.core.api.StatefulRedisConnection;
import java.io.BufferedReader;
import java.io.File;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.io.PrintWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.time.LocalDateTime;
import java.time.format.DateTimeFormatter;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;

/**
 * The multi-process scenario: {@code P} processes, each with its own client, pool and lock service,
 * {@code T} threads each, all on ONE key, holding it for a 1 ms critical section. Two variants: the
 * processes are objects in one JVM ({@code inproc}), or real child JVMs ({@code jvm}).
 *
 * <p>Reported from the merged history of every grant (wall-clock micros, one machine): owner changes
 * per second (the next grant went to another thread, of any process), grants per process (min, max,
 * largest deviation from the mean, Jain's fairness index), wait to acquire (p50, p99, p99.9),
 * overlapping holds (must be 0), and the server's own counts per grant: Redis round trips from
 * {@code INFO commandstats} of a private {@code redis-server} during the measured window, PostgreSQL
 * transactions of a private database from {@code pg_stat_database}, MariaDB {@code Questions} of each
 * session; the SQL counts cover the whole run (warm-up included), as PostgreSQL reports a busy
 * backend's counts only about once a second.
 *
 * <pre>
 * mvn -q -B -o -pl tools/leasehold-bench -am package -DskipTests
 * mvn -q -B -o -pl tools/leasehold-bench dependency:build-classpath -Dmdep.outputFile=cp.txt
 * java -cp tools/leasehold-bench/target/classes:$(cat tools/leasehold-bench/cp.txt) dev.leasehold.bench.MultiProcessBench
 * </pre>
 *
 * Settings (system properties): {@code bench.processes} (8), {@code bench.threads} (8), {@code
 * bench.seconds} measured (8), {@code bench.warmup} seconds (2), {@code bench.holdMicros} (1000),
 * {@code bench.modes} ({@code inproc,jvm}), {@code bench.contenders} (all: {@link #CONTENDERS}),
 * {@code bench.redis} (unset: a private redis-server is started), {@code bench.postgres} (admin URL,
 * jdbc:postgresql://127.0.0.1:5432/test; the bench creates and uses database {@code leasehold_bench}),
 * {@code bench.mariadb} (jdbc:mariadb://127.0.0.1:3306/test; same), {@code bench.sqlPool} (8
 * connections per process), {@code bench.out} (target/bench).
 */
public final class MultiProcessBench {

    /** Every contender the scenario knows, in report order. */
    static final List<String> CONTENDERS = List.of(
            "redis-floor",
            "leasehold-redis",
            "leasehold-redis-fair",
            "leasehold-redis-barging",
            "redisson-lock",
            "redisson-fair",
            "postgresql-floor",
            "leasehold-postgresql",
            "leasehold-postgresql-fair",
            "mariadb-floor",
            "leasehold-mariadb",
            "leasehold-mariadb-fair");

    static final String BENCH_DATABASE = "leasehold_bench";

    /** Where the servers are, as the children need them too. */
    record Endpoints(String redis, String postgres, String mariadb, int sqlPool) {

        static Endpoints fromProperties() {
            return new Endpoints(
                    System.getProperty("bench.redis.resolved", System.getProperty("bench.redis")),
                    System.getProperty("bench.postgres.bench", inBenchDatabase(adminPostgres())),
                    System.getProperty("bench.mariadb.bench", inBenchDatabase(adminMariadb())),
                    Integer.getInteger("bench.sqlPool", 8));
        }

        List<String> asProperties() {
            return List.of(
                    "-Dbench.redis.resolved=" + redis,
                    "-Dbench.postgres.bench=" + postgres,
                    "-Dbench.mariadb.bench=" + mariadb,
                    "-Dbench.sqlPool=" + sqlPool);
        }
    }

    /** The figures of one run of one contender in one variant. */
    record Report(
            String contender,
            String backend,
            String mode,
            int processes,
            int threads,
            double seconds,
            long grants,
            double grantsPerSecond,
            double ownerChangesPerSecond,
            double processChangesPerSecond,
            int minPerProcess,
            int maxPerProcess,
            double maxDeviation,
            double jain,
            double p50Millis,
            double p99Millis,
            double p999Millis,
            int overlaps,
            double roundTripsPerGrant,
            String serverDetail) {}

    private MultiProcessBench() {}

    static String adminPostgres() {
        return System.getProperty("bench.postgres", "jdbc:postgresql://127.0.0.1:5432/test");
    }

    static String adminMariadb() {
        return System.getProperty("bench.mariadb", "jdbc:mariadb://127.0.0.1:3306/test");
    }

    /** The same server, database {@value #BENCH_DATABASE}. */
    static String inBenchDatabase(String url) {
        int slash = url.indexOf('/', url.indexOf("//") + 2);
        int query = url.indexOf('?', slash);
        return url.substring(0, slash + 1) + BENCH_DATABASE + (query < 0 ? "" : url.substring(query));
    }

    static String backendOf(String contender) {
        return contender.contains("postgresql") ? "postgresql" : contender.contains("mariadb") ? "mariadb" : "redis";
    }

    static String user(String backend) {
        return backend.equals("postgresql") ? "postgres" : "root";
    }

    // ---------------------------------------------------------------- one process's contender

    /** A contender with its own client or pool, as one process of the scenario has. */
    static Contender create(String id, Endpoints endpoints, int threads) throws Exception {
        String backend = backendOf(id);
        switch (id) {
            case "redis-floor":
                return Contenders.rawRedis(endpoints.redis());
            case "leasehold-redis":
                return Contenders.leaseholdRedis(endpoints.redis());
            case "leasehold-redis-fair":
                return Contenders.leaseholdRedisFair(endpoints.redis(), Duration.ofSeconds(5));
            case "leasehold-redis-barging":
                return Contenders.leaseholdRedisBarging(endpoints.redis());
            case "redisson-lock":
                return Contenders.redisson(endpoints.redis(), false);
            case "redisson-fair":
                return Contenders.redissonFair(endpoints.redis());
            default:
                break;
        }
        Database database = backend.equals("postgresql") ? Database.POSTGRESQL : Database.MARIADB;
        String url = backend.equals("postgresql") ? endpoints.postgres() : endpoints.mariadb();
        if (id.endsWith("-floor")) {
            // a connection per thread, held for the whole run
            HikariDataSource pool = fixedPool(url, user(backend), threads + 1);
            return closing(Contenders.rawJdbc(pool, database), pool);
        }
        HikariDataSource pool = fixedPool(url, user(backend), endpoints.sqlPool());
        boolean fair = id.endsWith("-fair");
        JdbcLeaseStore.Builder builder = JdbcLeaseStore.builder(pool).database(database);
        if (fair) {
            builder.fairQueue(Duration.ofSeconds(2));
        }
        JdbcLeaseStore store = builder.build();
        Contender leasehold = Contenders.leasehold(
                "Leasehold (" + database.id() + (fair ? ", fair queue" : ", bounded barging") + ")",
                database.id(),
                LockService.builder(store).build(),
                () -> {});
        return new Delegating(leasehold) {
            @Override
            public long sessionStatements() throws SQLException {
                return SessionCounts.poolStatements(pool, endpoints.sqlPool(), database);
            }

            @Override
            public void close() throws Exception {
                super.close();
                pool.close();
            }
        };
    }

    static HikariDataSource fixedPool(String url, String user, int size) {
        return Contenders.pool(url, user, "", size, size);
    }

    private static Contender closing(Contender contender, AutoCloseable resource) {
        return new Delegating(contender) {
            @Override
            public void close() throws Exception {
                super.close();
                resource.close();
            }
        };
    }

    /** A contender that forwards everything; subclasses add to it. */
    private static class Delegating implements Contender {
        private final Contender target;

        Delegating(Contender target) {
            this.target = target;
        }

        @Override
        public String name() {
            return target.name();
        }

        @Override
        public String backend() {
            return target.backend();
        }

        @Override
        public boolean floor() {
            return target.floor();
        }

        @Override
        public void prepare(java.util.Collection<String> keys) throws Exception {
            target.prepare(keys);
        }

        @Override
        public Set<String> plainCommands() {
            return target.plainCommands();
        }

        @Override
        public long sessionStatements() throws Exception {
            return target.sessionStatements();
        }

        @Override
        public Held tryLock(String key) throws Exception {
            return target.tryLock(key);
        }

        @Override
        public Held lock(String key, java.time.Duration wait) throws Exception {
            return target.lock(key, wait);
        }

        @Override
        public void close() throws Exception {
            target.close();
        }
    }

    // ---------------------------------------------------------------- the parent

    public static void main(String[] args) throws Exception {
        if (args.length > 0 && args[0].equals("--child")) {
            child(args);
            return;
        }
        int processes = Integer.getInteger("bench.processes", 8);
        int threads = Integer.getInteger("bench.threads", 8);
        double seconds = Double.parseDouble(System.getProperty("bench.seconds", "8"));
        double warmup = Double.parseDouble(System.getProperty("bench.warmup", "2"));
        long holdNanos = Long.getLong("bench.holdMicros", 1000) * 1000;
        List<String> modes =
                Arrays.asList(System.getProperty("bench.modes", "inproc,jvm").split(","));
        List<String> contenders = Arrays.asList(System.getProperty("bench.contenders", String.join(",", CONTENDERS))
                .split(","));
        Path out = Path.of(System.getProperty("bench.out", "target/bench"));
        List<Report> reports = run(processes, threads, seconds, warmup, holdNanos, modes, contenders);
        Files.createDirectories(out);
        String md = markdown(reports, processes, threads, seconds, warmup, holdNanos);
        Files.writeString(out.resolve("multi-process.md"), md);
        System.out.println(md);
        System.out.println("written to " + out.toAbsolutePath().resolve("multi-process.md"));
        System.exit(0);
    }

    static List<Report> run(
            int processes,
            int threads,
            double seconds,
            double warmup,
            long holdNanos,
            List<String> modes,
            List<String> contenders)
            throws Exception {
        for (String id : contenders) {
            if (!CONTENDERS.contains(id)) {
                throw new IllegalArgumentException("unknown contender '" + id + "', known: " + CONTENDERS);
            }
        }
        boolean anyRedis = contenders.stream().anyMatch(c -> backendOf(c).equals("redis"));
        PrivateRedis privateRedis = anyRedis && System.getProperty("bench.redis") == null ? PrivateRedis.start() : null;
        try {
            String redisUri = privateRedis != null
                    ? privateRedis.uri
                    : System.getProperty("bench.redis", "redis://127.0.0.1:6379");
            if (anyRedis && privateRedis == null) {
                System.out.println("WARNING: shared Redis " + redisUri + ": its command counts include other clients");
            }
            Endpoints endpoints = new Endpoints(
                    redisUri,
                    inBenchDatabase(adminPostgres()),
                    inBenchDatabase(adminMariadb()),
                    Integer.getInteger("bench.sqlPool", 8));
            Map<String, HikariDataSource> admins = new LinkedHashMap<>();
            try {
                for (String backend : List.of("postgresql", "mariadb")) {
                    if (contenders.stream().anyMatch(c -> backendOf(c).equals(backend))) {
                        admins.put(backend, prepareDatabase(backend, endpoints));
                    }
                }
                List<Report> reports = new ArrayList<>();
                String runId = Long.toString(System.currentTimeMillis(), 36);
                for (String id : contenders) {
                    for (String mode : modes) {
                        System.out.println("== " + id + " (" + mode + ")");
                        Report report = scenario(
                                id,
                                mode,
                                endpoints,
                                admins.get(backendOf(id)),
                                runId,
                                processes,
                                threads,
                                seconds,
                                warmup,
                                holdNanos);
                        System.out.println(row(report));
                        reports.add(report);
                    }
                }
                return reports;
            } finally {
                admins.values().forEach(HikariDataSource::close);
            }
        } finally {
            if (privateRedis != null) {
                privateRedis.close();
            }
        }
    }

    /** Creates the bench database (if missing) and the lease tables in it; returns an admin pool. */
    private static HikariDataSource prepareDatabase(String backend, Endpoints endpoints) throws SQLException {
        String admin = backend.equals("postgresql") ? adminPostgres() : adminMariadb();
        HikariDataSource adminPool = fixedPool(admin, user(backend), 2);
        try (Connection c = adminPool.getConnection();
                Statement s = c.createStatement()) {
            if (backend.equals("postgresql")) {
                boolean exists;
                try (var row = s.executeQuery("SELECT 1 FROM pg_database WHERE datname = '" + BENCH_DATABASE + "'")) {
                    exists = row.next();
                }
                if (!exists) {
                    s.execute("CREATE DATABASE " + BENCH_DATABASE);
                }
            } else {
                s.execute("CREATE DATABASE IF NOT EXISTS " + BENCH_DATABASE);
            }
        }
        String url = backend.equals("postgresql") ? endpoints.postgres() : endpoints.mariadb();
        try (HikariDataSource setup = fixedPool(url, user(backend), 1)) {
            Database database = backend.equals("postgresql") ? Database.POSTGRESQL : Database.MARIADB;
            JdbcSchema.create(setup, database);
        }
        return adminPool;
    }

    private static Report scenario(
            String id,
            String mode,
            Endpoints endpoints,
            HikariDataSource admin,
            String runId,
            int processes,
            int threads,
            double seconds,
            double warmup,
            long holdNanos)
            throws Exception {
        String backend = backendOf(id);
        String key = "mp-" + runId + "-" + id + "-" + mode;
        if (id.endsWith("-floor") && !backend.equals("redis")) {
            try (Contender setup = create(id, endpoints, 1)) {
                setup.prepare(List.of(key));
            }
        }
        RedisClient statsClient = backend.equals("redis") ? RedisClient.create(endpoints.redis()) : null;
        StatefulRedisConnection<String, String> stats = statsClient != null ? statsClient.connect() : null;
        try {
            long sqlBefore = backend.equals("postgresql") ? ServerCounts.settledTransactions(admin, BENCH_DATABASE) : 0;
            Scenario scenario = new Scenario(id, endpoints, key, processes, threads, seconds, warmup, holdNanos);
            Run run = mode.equals("jvm") ? children(scenario, stats) : inProcess(scenario, stats);
            String detail;
            double roundTrips;
            long windowGrants = run.records.stream()
                    .filter(r -> r.acquiredMicros() >= run.measureFrom && r.acquiredMicros() < run.end)
                    .count();
            if (backend.equals("redis")) {
                Map<String, Long> delta = ServerCounts.delta(run.redisBefore, run.redisAfter);
                roundTrips = ServerCounts.roundTrips(delta, run.plainCommands) / (double) Math.max(1, windowGrants);
                detail = "window, per grant: " + ServerCounts.perGrant(delta, windowGrants);
            } else if (backend.equals("postgresql")) {
                long transactions = ServerCounts.settledTransactions(admin, BENCH_DATABASE) - sqlBefore;
                roundTrips = transactions / (double) Math.max(1, run.records.size());
                detail = String.format(
                        Locale.ROOT,
                        "whole run: %d transactions (pg_stat_database) / %d grants",
                        transactions,
                        run.records.size());
            } else {
                roundTrips = run.sqlStatements / (double) Math.max(1, run.records.size());
                detail = String.format(
                        Locale.ROOT,
                        "whole run: %d statements (session Questions) / %d grants",
                        run.sqlStatements,
                        run.records.size());
            }
            return analyse(run.name, backend, mode, processes, threads, run, roundTrips, detail);
        } finally {
            if (stats != null) {
                stats.close();
                statsClient.shutdown();
            }
        }
    }

    /** What a run produced. */
    static final class Run {
        String name;
        final List<HotKeyWorkload.GrantRecord> records = Collections.synchronizedList(new ArrayList<>());
        long measureFrom;
        long end;
        Map<String, Long> redisBefore = Map.of();
        Map<String, Long> redisAfter = Map.of();
        Set<String> plainCommands = Set.of();
        long sqlStatements;

        /** The warm-up begins at {@code start}; the measured window follows it. */
        void window(Scenario scenario, long start) {
            measureFrom = start + (long) (scenario.warmup() * 1e6);
            end = measureFrom + (long) (scenario.seconds() * 1e6);
        }
    }

    /** One scenario: which contender, where, on which key, how many processes and threads, how long. */
    record Scenario(
            String id,
            Endpoints endpoints,
            String key,
            int processes,
            int threads,
            double seconds,
            double warmup,
            long holdNanos) {}

    private static Run inProcess(Scenario scenario, StatefulRedisConnection<String, String> stats) throws Exception {
        int processes = scenario.processes();
        Run run = new Run();
        List<Contender> contenders = new ArrayList<>();
        ExecutorService pool = Executors.newFixedThreadPool(processes);
        try {
            for (int p = 0; p < processes; p++) {
                contenders.add(create(scenario.id(), scenario.endpoints(), scenario.threads()));
            }
            run.name = contenders.get(0).name();
            run.plainCommands = contenders.get(0).plainCommands();
            long start = HotKeyWorkload.nowMicros() + 200_000;
            run.window(scenario, start);
            List<Future<List<HotKeyWorkload.GrantRecord>>> done = new ArrayList<>();
            for (int p = 0; p < processes; p++) {
                Contender c = contenders.get(p);
                int process = p;
                done.add(pool.submit(() -> HotKeyWorkload.run(
                        c, process, scenario.threads(), scenario.key(), scenario.holdNanos(), start, run.end)));
            }
            snapshotWindow(run, stats);
            for (Future<List<HotKeyWorkload.GrantRecord>> f : done) {
                run.records.addAll(f.get(10, TimeUnit.MINUTES));
            }
            for (Contender c : contenders) {
                long statements = c.sessionStatements();
                run.sqlStatements += Math.max(0, statements);
            }
        } finally {
            pool.shutdownNow();
            for (Contender c : contenders) {
                c.close();
            }
        }
        return run;
    }

    /** Takes the Redis counts at the start and the end of the measured window. */
    private static void snapshotWindow(Run run, StatefulRedisConnection<String, String> stats)
            throws InterruptedException {
        HotKeyWorkload.sleepUntil(run.measureFrom);
        if (stats != null) {
            run.redisBefore = ServerCounts.redis(stats);
        }
        HotKeyWorkload.sleepUntil(run.end);
        if (stats != null) {
            run.redisAfter = ServerCounts.redis(stats);
        }
    }

    private static Run children(Scenario scenario, StatefulRedisConnection<String, String> stats) throws Exception {
        String id = scenario.id();
        int processes = scenario.processes();
        Run run = new Run();
        String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
        String classpath = System.getProperty("bench.classpath", System.getProperty("java.class.path"));
        Path logs = Path.of(System.getProperty("bench.out", "target/bench"), "children");
        Files.createDirectories(logs);
        List<Process> children = new ArrayList<>();
        List<BufferedReader> outputs = new ArrayList<>();
        List<PrintWriter> inputs = new ArrayList<>();
        try {
            for (int p = 0; p < processes; p++) {
                List<String> command = new ArrayList<>(
                        List.of(java, "-Xmx256m", "-XX:+UseSerialGC", "-Dorg.slf4j.simpleLogger.defaultLogLevel=warn"));
                command.addAll(scenario.endpoints().asProperties());
                command.addAll(List.of(
                        "-cp",
                        classpath,
                        MultiProcessBench.class.getName(),
                        "--child",
                        id,
                        Integer.toString(p),
                        Integer.toString(scenario.threads()),
                        scenario.key(),
                        Long.toString(scenario.holdNanos())));
                Process child = new ProcessBuilder(command)
                        .redirectError(new File(logs.toFile(), id + "-" + p + ".log"))
                        .start();
                children.add(child);
                outputs.add(new BufferedReader(new InputStreamReader(child.getInputStream(), StandardCharsets.UTF_8)));
                inputs.add(new PrintWriter(child.getOutputStream(), true, StandardCharsets.UTF_8));
            }
            for (int p = 0; p < processes; p++) {
                String line = outputs.get(p).readLine();
                if (line == null || !line.startsWith("READY ")) {
                    throw new IllegalStateException("child " + p + " of " + id + " did not start (said " + line
                            + "); see " + logs.resolve(id + "-" + p + ".log"));
                }
                String[] ready = line.split(" ", 3);
                run.name = ready[2];
                run.plainCommands = ready[1].equals("-") ? Set.of() : Set.of(ready[1].split(","));
            }
            long start = HotKeyWorkload.nowMicros() + 300_000;
            run.window(scenario, start);
            for (PrintWriter in : inputs) {
                in.println("GO " + start + " " + run.end);
            }
            snapshotWindow(run, stats);
            for (int p = 0; p < processes; p++) {
                String line;
                while ((line = outputs.get(p).readLine()) != null && !line.equals("END")) {
                    if (line.startsWith("G ")) {
                        run.records.add(HotKeyWorkload.GrantRecord.parse(line));
                    } else if (line.startsWith("STATEMENTS ")) {
                        run.sqlStatements += Math.max(0, Long.parseLong(line.substring(11)));
                    } else if (line.startsWith("FAILED ")) {
                        throw new IllegalStateException("child " + p + " of " + id + ": " + line);
                    }
                }
            }
            for (Process child : children) {
                if (!child.waitFor(60, TimeUnit.SECONDS)) {
                    child.destroyForcibly();
                }
            }
        } finally {
            for (Process child : children) {
                if (child.isAlive()) {
                    child.destroyForcibly();
                }
            }
        }
        return run;
    }

    /** A child JVM: one process of the scenario, driven over stdin/stdout by the parent. */
    private static void child(String[] args) throws Exception {
        String id = args[1];
        int process = Integer.parseInt(args[2]);
        int threads = Integer.parseInt(args[3]);
        String key = args[4];
        long holdNanos = Long.parseLong(args[5]);
        PrintStream out = new PrintStream(new java.io.FileOutputStream(java.io.FileDescriptor.out), false, "UTF-8");
        // Libraries that print to System.out must not mix into the protocol.
        System.setOut(System.err);
        try (Contender contender = create(id, Endpoints.fromProperties(), threads)) {
            // a fresh JVM runs its first thousands of calls interpreted: warm the paths on a key of its own
            String warmKey = key + "-warm-" + process;
            contender.prepare(List.of(warmKey));
            for (int i = 0; i < Integer.getInteger("bench.childWarmCalls", 300); i++) {
                Contender.Held held = contender.lock(warmKey, Duration.ofSeconds(5));
                if (held != null) {
                    held.unlock();
                }
            }
            Set<String> plain = contender.plainCommands();
            out.println("READY " + (plain.isEmpty() ? "-" : String.join(",", plain)) + " " + contender.name());
            out.flush();
            BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
            String go = in.readLine();
            if (go == null || !go.startsWith("GO ")) {
                return;
            }
            String[] f = go.split(" ");
            try {
                List<HotKeyWorkload.GrantRecord> records = HotKeyWorkload.run(
                        contender, process, threads, key, holdNanos, Long.parseLong(f[1]), Long.parseLong(f[2]));
                for (HotKeyWorkload.GrantRecord r : records) {
                    out.println(r.line());
                }
                out.println("STATEMENTS " + contender.sessionStatements());
            } catch (Exception e) {
                out.println("FAILED " + e);
            }
            out.println("END");
            out.flush();
        }
        System.exit(0);
    }

    // ---------------------------------------------------------------- figures

    static Report analyse(
            String name,
            String backend,
            String mode,
            int processes,
            int threads,
            Run run,
            double roundTrips,
            String detail) {
        List<HotKeyWorkload.GrantRecord> all = new ArrayList<>(run.records);
        all.sort(Comparator.comparingLong(HotKeyWorkload.GrantRecord::acquiredMicros));
        int overlaps = 0;
        for (int i = 1; i < all.size(); i++) {
            if (all.get(i).acquiredMicros() < all.get(i - 1).releasedMicros()) {
                overlaps++;
            }
        }
        List<HotKeyWorkload.GrantRecord> window = all.stream()
                .filter(r -> r.acquiredMicros() >= run.measureFrom && r.acquiredMicros() < run.end)
                .toList();
        double seconds = (run.end - run.measureFrom) / 1e6;
        int ownerChanges = 0;
        int processChanges = 0;
        for (int i = 1; i < window.size(); i++) {
            HotKeyWorkload.GrantRecord a = window.get(i - 1);
            HotKeyWorkload.GrantRecord b = window.get(i);
            if (a.process() != b.process()) {
                processChanges++;
                ownerChanges++;
            } else if (a.thread() != b.thread()) {
                ownerChanges++;
            }
        }
        int[] perProcess = new int[processes];
        window.forEach(r -> perProcess[r.process()]++);
        long[] waits = window.stream()
                .mapToLong(HotKeyWorkload.GrantRecord::waitNanos)
                .sorted()
                .toArray();
        double mean = window.size() / (double) processes;
        int min = Arrays.stream(perProcess).min().orElse(0);
        int max = Arrays.stream(perProcess).max().orElse(0);
        double deviation = mean == 0 ? 0 : Math.max(max - mean, mean - min) / mean;
        return new Report(
                name,
                backend,
                mode,
                processes,
                threads,
                seconds,
                window.size(),
                window.size() / seconds,
                ownerChanges / seconds,
                processChanges / seconds,
                min,
                max,
                deviation,
                jain(perProcess),
                percentile(waits, 0.50),
                percentile(waits, 0.99),
                percentile(waits, 0.999),
                overlaps,
                roundTrips,
                detail);
    }

    /** Jain's fairness index of the shares: 1 when all are equal, 1/n when one process has all. */
    static double jain(int[] shares) {
        double sum = 0;
        double squares = 0;
        for (int x : shares) {
            sum += x;
            squares += (double) x * x;
        }
        return squares == 0 ? 0 : sum * sum / (shares.length * squares);
    }

    static double percentile(long[] sortedNanos, double p) {
        if (sortedNanos.length == 0) {
            return 0;
        }
        return sortedNanos[Math.min(sortedNanos.length - 1, (int) Math.ceil(p * sortedNanos.length) - 1)] / 1e6;
    }

    static String row(Report r) {
        return String.format(
                Locale.ROOT,
                "| %s | %s | %s | %.0f | %.0f | %.0f | %d / %d | %.0f %% | %.3f | %.1f | %.1f | %.1f | %.2f | %d | %s |",
                r.backend(),
                r.contender(),
                r.mode(),
                r.ownerChangesPerSecond(),
                r.grantsPerSecond(),
                r.processChangesPerSecond(),
                r.minPerProcess(),
                r.maxPerProcess(),
                r.maxDeviation() * 100,
                r.jain(),
                r.p50Millis(),
                r.p99Millis(),
                r.p999Millis(),
                r.roundTripsPerGrant(),
                r.overlaps(),
                r.serverDetail());
    }

    static String markdown(
            List<Report> reports, int processes, int threads, double seconds, double warmup, long holdNanos) {
        StringBuilder md = new StringBuilder();
        md.append("# Many processes, one key\n\n")
                .append(String.format(
                        Locale.ROOT,
                        "Run %s on %d cores, Java %s. %d processes x %d threads on ONE key, %.1f ms held; "
                                + "%.0f s warm-up, %.0f s measured. inproc: the processes are objects in one JVM, "
                                + "each with its own client, pool and lock service; jvm: child JVMs.\n\n",
                        LocalDateTime.now().format(DateTimeFormatter.ISO_LOCAL_DATE_TIME),
                        Runtime.getRuntime().availableProcessors(),
                        System.getProperty("java.version"),
                        processes,
                        threads,
                        holdNanos / 1e6,
                        warmup,
                        seconds))
                .append("Owner change: the next grant went to another thread (of any process). Jain: "
                        + "(sum x)^2 / (n sum x^2) of grants per process, 1 = equal shares. Round trips per grant:"
                        + " counted by the server (Redis: client commands in INFO commandstats, the measured window;"
                        + " PostgreSQL: transactions in pg_stat_database; MariaDB: session Questions; SQL over the"
                        + " whole run). Overlaps: a grant that began before the previous one ended (must be 0).\n\n")
                .append("| backend | contender | mode | owner changes/s | grants/s | process changes/s "
                        + "| grants per process min / max | max dev | Jain | p50 ms | p99 ms | p99.9 ms "
                        + "| round trips / grant | overlaps | server counts |\n")
                .append("|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|\n");
        reports.forEach(r -> md.append(row(r)).append('\n'));
        return md.toString();
    }
}
