package dev.leasehold.faults;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.leasehold.LockKey;
import dev.leasehold.LockService;
import dev.leasehold.jdbc.Database;
import dev.leasehold.testkit.TestServices;
import java.io.IOException;
import java.math.BigDecimal;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Base64;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * 8. Two JVMs of the reference loan service ({@code examples/loan-service}, run as its users run
 * it: {@code java -jar loan-service.jar --spring.profiles.active=postgres}) on one private
 * PostgreSQL schema and one Redis key prefix, under a storm of repayments over the five demo notes
 * from twelve clients, each request sent to either instance, a third of them duplicates (the same
 * trade number, the repayment's idempotency key, and the same body) racing or following their
 * original, often on the other instance. Protected: conservation per note (the service's {@code
 * /conservation} holds, and its accepted repayments grew by exactly the amounts of the distinct
 * trade numbers), every trade number booked once, every duplicate answered with the original
 * receipt, no 5xx, no repayment slower than 5 s to its final answer (a 409 with {@code Retry-After}
 * is retried as a client would, and counts towards the time). Canary: the same storm on a
 * repayment endpoint without lock or idempotency ({@link PlainRepayments}, two JVMs): lost updates
 * and double bookings.
 *
 * <p>A {@link Workload} in this JVM takes the notes' lock keys ({@code borrow:demo:STORM-n}, on the
 * same Redis and key prefix) through the storm, so that its grants and the services' interleave;
 * its operations are in the row's history with the answers (the services' grants are not). The
 * long profile sends further storms until the history holds its least number of operations.
 */
final class StormAcrossInstances implements Scenario {

    static final String TITLE = "8 storm across instances";
    /** Where the loan service's jar is, set by the build; else found from the working directory. */
    static final String JAR_PROPERTY = "faults.loanService";

    private static final long PLAIN_PRINCIPAL = 1_000_000;
    private static final int NOTES = 5;
    private static final int CLIENTS = 12;
    /** The repayment of a storm from which the workload takes the notes' keys. */
    private static final int WARM_UP = 4 * CLIENTS;

    private static final Duration STALL = Duration.ofSeconds(5);
    private static final Duration GIVE_UP = Duration.ofSeconds(60);
    private static final String TENANT = "demo";
    private static final String AUTHORIZATION =
            "Basic " + Base64.getEncoder().encodeToString("demo-app:demo-app-pw".getBytes(StandardCharsets.UTF_8));
    private static final ObjectMapper JSON = new ObjectMapper();

    @Override
    public String title() {
        return TITLE;
    }

    @Override
    public List<String> backends() {
        return List.of("postgresql + redis");
    }

    @Override
    public Outcome run(String backend, Profile profile) throws Exception {
        Tally tally = new Tally(TITLE, backend);
        Path jar = loanServiceJar();
        String redis = TestServices.redis().uri();
        String prefix = "faults-" + UUID.randomUUID().toString().substring(0, 8) + ":";
        try (PrivateDatabase service = PrivateDatabase.empty(Database.POSTGRESQL);
                PrivateDatabase plain = PrivateDatabase.create(Database.POSTGRESQL)) {
            plain.execute(
                    "CREATE TABLE fault_plain_note (no VARCHAR(32) NOT NULL PRIMARY KEY, balance BIGINT NOT NULL)",
                    Bookings.createTable("fault_plain_repayment"));
            for (int n = 1; n <= NOTES; n++) {
                plain.execute("INSERT INTO fault_plain_note (no, balance) VALUES ('" + note(n) + "', " + PLAIN_PRINCIPAL
                        + ")");
            }
            List<ChildJvm> jvms = new ArrayList<>();
            try {
                List<String> loans = new ArrayList<>();
                for (int i = 0; i < 2; i++) {
                    int port = Processes.freePort();
                    jvms.add(startLoanService(i, jar, port, service.spec(), redis, prefix));
                    loans.add("http://127.0.0.1:" + port + "/api/tenants/" + TENANT);
                }
                List<String> plains = new ArrayList<>();
                for (int i = 0; i < 2; i++) {
                    int port = Processes.freePort();
                    ChildJvm jvm = ChildJvm.start(
                            "plain-repayments-" + i,
                            PlainRepayments.class,
                            List.of(),
                            Map.of(),
                            String.valueOf(port),
                            plain.spec().encode());
                    jvms.add(jvm);
                    jvm.expect("READY", Duration.ofSeconds(60));
                    plains.add("http://127.0.0.1:" + port);
                }
                HttpClient http = HttpClient.newBuilder()
                        .version(HttpClient.Version.HTTP_1_1)
                        .connectTimeout(Duration.ofSeconds(5))
                        .build();
                for (int i = 0; i < 2; i++) {
                    awaitReady(http, jvms.get(i), loans.get(i));
                }
                Map<String, JsonNode> before = conservation(http, loans.get(0));
                Map<String, List<Answer>> answers = new ConcurrentHashMap<>();
                History history = new History();
                AtomicInteger retried = new AtomicInteger();
                List<Repayment> all = new ArrayList<>();
                List<Repayment> first = null;
                long stormMillis = 0;
                int storms = 0;
                // The workload takes the very keys the services lock for a repayment (the notes'
                // borrow/demo keys, on the same Redis and prefix), so that its grants and the
                // services' interleave through the storm; its own operations are the history's
                // grants (the services' are inside their JVMs and not recorded).
                List<LockKey> noteKeys = new ArrayList<>();
                for (int n = 1; n <= NOTES; n++) {
                    noteKeys.add(LockKey.ofTenant("borrow", TENANT, note(n)));
                }
                try (Library.Store store = Library.redisStore(Library.redisUri(redis, Duration.ofSeconds(2)), prefix);
                        LockService locks = Library.locks(store.store())) {
                    Workload workload =
                            new Workload("W", locks, null, history, "storm-", Duration.ofSeconds(5), profile);
                    // it takes the notes' keys from the first storm's WARM_UP-th repayment on: the
                    // cold instances' first repayments took up to 4.4 s without it (see the README)
                    try {
                        // the long profile sends storms until the history holds its least operations
                        for (int round = 0;
                                round == 0 || (history.size() < profile.minOperations() && round < 20);
                                round++) {
                            List<Repayment> storm = storm(round, profile.times(200));
                            long started = System.nanoTime();
                            run(storm, i -> {
                                if (i == WARM_UP) {
                                    workload.contend(noteKeys);
                                }
                                send(http, loans, i, storm.get(i), answers, history, retried, tally);
                            });
                            stormMillis += (System.nanoTime() - started) / 1_000_000;
                            all.addAll(storm);
                            if (first == null) {
                                first = storm;
                            }
                            storms++;
                        }
                    } finally {
                        workload.close();
                    }
                    tally.note("workload: " + workload.operations() + " operations; acquires of the notes' keys "
                            + noteKeys.stream().map(LockKey::render).toList() + ": " + workload.contendedGranted()
                            + " granted, " + workload.contendedRefused() + " refused (held past the 200 ms wait)");
                }
                checkProtected(http, loans, before, all, answers, history, tally);
                List<Repayment> canary = first;
                run(canary, i -> sendPlain(http, plains.get(i % plains.size()), canary.get(i)));
                checkCanary(plain, canary, tally);
                tally.note("requests: " + first.size() + " ("
                        + first.stream().filter(r -> r.duplicate).count() + " duplicates) per storm, " + storms
                        + " protected storms (" + all.size() + " requests), the canary's one storm, " + CLIENTS
                        + " clients, " + NOTES + " notes, two loan-service JVMs " + loans + ", protected storms "
                        + stormMillis + " ms, " + retried.get() + " answers 409 retried");
            } finally {
                jvms.forEach(ChildJvm::close);
            }
        }
        return tally.outcome();
    }

    /** The reference loan service's jar: {@value #JAR_PROPERTY}, else the example's build output. */
    static Path loanServiceJar() {
        String configured = System.getProperty(JAR_PROPERTY);
        List<Path> candidates = new ArrayList<>();
        if (configured != null && !configured.isBlank()) {
            candidates.add(Path.of(configured));
        } else {
            for (Path dir = Path.of("").toAbsolutePath(); dir != null; dir = dir.getParent()) {
                candidates.add(dir.resolve("examples/loan-service/target/loan-service.jar"));
            }
        }
        return candidates.stream()
                .filter(Files::isRegularFile)
                .findFirst()
                .orElseThrow(() -> new IllegalStateException("the loan service's jar is not built (looked for "
                        + candidates + "); build it with mvn -pl tools/leasehold-faults -am verify"));
    }

    /**
     * One loan-service JVM on the {@code postgres} profile (PostgreSQL records, Redis leases), on
     * the private schema (its own Flyway migrates it; the first instance seeds the demo notes, the
     * second serves them) and the private key prefix; its log is {@code target/faults/loan-service-N.log}.
     */
    private static ChildJvm startLoanService(
            int instance, Path jar, int port, PrivateDatabase.Spec db, String redis, String prefix) throws IOException {
        String url = db.url() + (db.url().contains("?") ? "&" : "?") + "currentSchema=" + db.name();
        return ChildJvm.startJar(
                "loan-service-" + instance,
                jar,
                List.of("-Xmx384m"),
                "--spring.profiles.active=postgres",
                "--server.port=" + port,
                "--server.address=127.0.0.1",
                "--spring.datasource.url=" + url,
                "--spring.datasource.username=" + db.user(),
                "--spring.datasource.password=" + db.password(),
                // two instances beside the other tests on one shared server: a few connections each
                "--spring.datasource.hikari.maximum-pool-size=12",
                "--spring.datasource.hikari.minimum-idle=2",
                "--spring.flyway.schemas=" + db.name(),
                "--leasehold.redis.url=" + redis,
                "--leasehold.redis.key-prefix=" + prefix,
                "--loan.demo.enabled=" + (instance == 0),
                "--spring.main.banner-mode=off");
    }

    /**
     * Waits until the instance is ready as a load balancer would see it: {@code /actuator/health}
     * UP (the lease store included: the service connects to Redis on first use, and its health
     * probe makes that first use) and a demo note served (migrated and seeded).
     */
    private static void awaitReady(HttpClient http, ChildJvm jvm, String base) throws Exception {
        String root = base.substring(0, base.indexOf("/api/"));
        List<String> probes = List.of(root + "/actuator/health", base + "/notes/" + note(NOTES) + "/conservation");
        long deadline = System.nanoTime() + Duration.ofSeconds(180).toNanos();
        String last = "nothing";
        int ready = 0;
        while (ready < probes.size()) {
            if (!jvm.process().isAlive()) {
                throw new IllegalStateException("loan service " + jvm.name() + " exited with "
                        + jvm.process().exitValue() + " before it served\n" + jvm.logTail());
            }
            if (System.nanoTime() > deadline) {
                throw new IllegalStateException("loan service " + jvm.name() + " was not ready within 180 s (last: "
                        + last + ")\n" + jvm.logTail());
            }
            try {
                HttpResponse<String> response = http.send(get(probes.get(ready)), HttpResponse.BodyHandlers.ofString());
                if (response.statusCode() == 200) {
                    ready++;
                    continue;
                }
                last = probes.get(ready) + " answered " + response.statusCode() + " " + response.body();
            } catch (IOException e) {
                last = probes.get(ready) + ": " + e; // not listening yet
            }
            TimeUnit.MILLISECONDS.sleep(200); // poll interval, the answer decides
        }
    }

    private static String note(int n) {
        return "STORM-" + n;
    }

    /** One repayment; a duplicate repeats an earlier one's trade number, note and amount. */
    record Repayment(String key, String note, long amount, boolean duplicate) {
        String body() {
            return "{\"channel\":\"APP\",\"outTradeNo\":\"" + key + "\",\"amount\":" + amount + ".00}";
        }
    }

    /** What one repayment was finally answered: the receipt, and whether it said it was a duplicate. */
    record Answer(String receipt, boolean duplicate, long millis) {}

    /**
     * The storm: a third duplicates, half of them of one of the last 24 originals (racing it), the
     * others of any earlier one (a late retry).
     */
    private static List<Repayment> storm(int round, int size) {
        Random random = new Random();
        List<Repayment> storm = new ArrayList<>();
        List<Repayment> originals = new ArrayList<>();
        for (int i = 0; i < size; i++) {
            if (i > 10 && random.nextInt(3) == 0) {
                int back = random.nextBoolean()
                        ? random.nextInt(Math.min(24, originals.size()))
                        : random.nextInt(originals.size());
                Repayment original = originals.get(originals.size() - 1 - back);
                storm.add(new Repayment(original.key, original.note, original.amount, true));
            } else {
                Repayment r = new Repayment(
                        "F" + round + "-" + i, note(1 + random.nextInt(NOTES)), 1 + random.nextInt(9), false);
                storm.add(r);
                originals.add(r);
            }
        }
        return storm;
    }

    private interface Shot {
        void fire(int index) throws Exception;
    }

    /** Fires every request of the storm from the clients, in order. */
    private static void run(List<Repayment> storm, Shot shot) throws Exception {
        ExecutorService clients = Executors.newFixedThreadPool(CLIENTS);
        try {
            List<Future<?>> sent = new ArrayList<>();
            for (int i = 0; i < storm.size(); i++) {
                int index = i;
                sent.add(clients.submit(() -> {
                    shot.fire(index);
                    return null;
                }));
            }
            for (Future<?> f : sent) {
                f.get(120, TimeUnit.SECONDS);
            }
        } finally {
            clients.shutdownNow();
        }
    }

    private static HttpRequest get(String uri) {
        return HttpRequest.newBuilder(URI.create(uri))
                .header("Authorization", AUTHORIZATION)
                .timeout(Duration.ofSeconds(30))
                .GET()
                .build();
    }

    /** One repayment until its final answer: a 409 (busy, or in progress) is retried after its Retry-After. */
    private static void send(
            HttpClient http,
            List<String> bases,
            int index,
            Repayment r,
            Map<String, List<Answer>> answers,
            History history,
            AtomicInteger retried,
            Tally tally)
            throws Exception {
        String base = bases.get(index % bases.size());
        if (r.duplicate) {
            history.fault("duplicate of " + r.key + " to instance " + index % bases.size());
        }
        HttpRequest request = HttpRequest.newBuilder(URI.create(base + "/notes/" + r.note + "/repayments"))
                .header("Authorization", AUTHORIZATION)
                .header("Content-Type", "application/json")
                .timeout(Duration.ofSeconds(30))
                .POST(HttpRequest.BodyPublishers.ofString(r.body()))
                .build();
        long start = System.nanoTime();
        tally.operation();
        while (true) {
            HttpResponse<String> response;
            try {
                response = http.send(request, HttpResponse.BodyHandlers.ofString());
            } catch (IOException e) {
                tally.violation("repayment " + r.key + " to " + base + " got no answer: " + e);
                return;
            }
            Duration took = Duration.ofNanos(System.nanoTime() - start);
            int status = response.statusCode();
            if (status == 409 && took.compareTo(GIVE_UP) < 0) {
                retried.incrementAndGet();
                long seconds =
                        response.headers().firstValueAsLong("Retry-After").orElse(1);
                TimeUnit.MILLISECONDS.sleep(Math.min(1_000, seconds * 1_000)); // the client's back-off
                continue;
            }
            tally.stall(took);
            if (took.compareTo(STALL) > 0) {
                tally.violation("repayment " + r.key + " of " + r.note + " took " + took.toMillis() + " ms");
            }
            if (status == 200) {
                boolean duplicate = response.headers()
                        .firstValue("Repayment-Duplicate")
                        .map("true"::equals)
                        .orElse(false);
                answers.computeIfAbsent(r.key, k -> new CopyOnWriteArrayList<>())
                        .add(new Answer(response.body(), duplicate, took.toMillis()));
                // Each answer acknowledges two effects: the trade booked, and booked as this receipt.
                String flow = JSON.readTree(response.body()).path("flowId").asText();
                for (String effect : List.of(r.key, r.key + "#" + flow)) {
                    history.add(
                            "client",
                            History.Kind.WRITE,
                            r.key,
                            null,
                            start,
                            0,
                            History.Result.OK,
                            "repayment",
                            effect);
                }
            } else {
                tally.violation("repayment " + r.key + " of " + r.note + " to " + base + " was answered " + status
                        + ": " + response.body());
            }
            return;
        }
    }

    /** Each note's conservation record, by note. */
    private static Map<String, JsonNode> conservation(HttpClient http, String base) throws Exception {
        Map<String, JsonNode> byNote = new HashMap<>();
        for (int n = 1; n <= NOTES; n++) {
            HttpResponse<String> response =
                    http.send(get(base + "/notes/" + note(n) + "/conservation"), HttpResponse.BodyHandlers.ofString());
            if (response.statusCode() != 200) {
                throw new IllegalStateException(
                        "conservation of " + note(n) + " answered " + response.statusCode() + ": " + response.body());
            }
            byNote.put(note(n), JSON.readTree(response.body()));
        }
        return byNote;
    }

    private static void checkProtected(
            HttpClient http,
            List<String> bases,
            Map<String, JsonNode> before,
            List<Repayment> storm,
            Map<String, List<Answer>> answers,
            History history,
            Tally tally)
            throws Exception {
        Map<String, Repayment> originals = new HashMap<>();
        storm.stream().filter(r -> !r.duplicate).forEach(r -> originals.put(r.key, r));
        for (Repayment r : originals.values()) {
            List<Answer> got = answers.getOrDefault(r.key, List.of());
            if (got.isEmpty()) {
                continue; // already counted: its requests were not answered 200
            }
            String original = got.get(0).receipt();
            for (Answer a : got) {
                if (!a.receipt().equals(original)) {
                    tally.violation(
                            "trade " + r.key + " was answered receipt " + a.receipt() + " and also " + original);
                }
            }
            long booked = got.stream().filter(a -> !a.duplicate()).count();
            if (booked != 1) {
                tally.violation("trade " + r.key + " was answered as a new repayment " + booked + " times");
            }
        }
        for (String base : bases) {
            Map<String, JsonNode> after = conservation(http, base);
            for (int n = 1; n <= NOTES; n++) {
                String note = note(n);
                JsonNode c = after.get(note);
                List<Repayment> ofNote = originals.values().stream()
                        .filter(r -> r.note.equals(note))
                        .toList();
                BigDecimal repaid = BigDecimal.valueOf(
                        ofNote.stream().mapToLong(Repayment::amount).sum());
                BigDecimal accepted = c.get("acceptedRepayments")
                        .decimalValue()
                        .subtract(before.get(note).get("acceptedRepayments").decimalValue());
                long flows = c.get("acceptedFlows").asLong()
                        - before.get(note).get("acceptedFlows").asLong();
                if (!c.get("holds").asBoolean()) {
                    tally.violation("note " + note + " does not conserve: " + c);
                }
                if (accepted.compareTo(repaid) != 0 || flows != ofNote.size()) {
                    tally.violation("note " + note + " accepted " + accepted + " in " + flows + " flows, but "
                            + ofNote.size() + " distinct repayments of " + repaid + " were sent (" + base + ")");
                }
            }
        }
        Map<String, Long> effects = new HashMap<>();
        for (int n = 1; n <= NOTES; n++) {
            String note = note(n);
            HttpResponse<String> response = http.send(
                    get(bases.get(1) + "/notes/" + note + "/repayments"), HttpResponse.BodyHandlers.ofString());
            Map<String, List<JsonNode>> flowsByTrade = new HashMap<>();
            for (JsonNode flow : JSON.readTree(response.body())) {
                String trade = flow.get("outTradeNo").asText();
                flowsByTrade.computeIfAbsent(trade, k -> new ArrayList<>()).add(flow);
                effects.merge(trade, 1L, Long::sum);
                effects.merge(trade + "#" + flow.path("flowId").asText(), 1L, Long::sum);
            }
            for (Repayment r : originals.values()) {
                if (!r.note.equals(note) || !answers.containsKey(r.key)) {
                    continue;
                }
                List<JsonNode> flows = flowsByTrade.getOrDefault(r.key, List.of());
                JsonNode receipt = JSON.readTree(answers.get(r.key).get(0).receipt());
                if (flows.size() != 1) {
                    tally.violation("trade " + r.key + " was booked " + flows.size() + " times on " + note);
                } else if (!flows.get(0).get("flowId").equals(receipt.get("flowId"))) {
                    tally.violation(
                            "trade " + r.key + " was answered receipt " + receipt + " but booked " + flows.get(0));
                }
            }
        }
        // Every answer's trade booked once, and as the receipt it was answered: the checker's
        // effects rule over the whole storm. Its grants are the workload's (the services' are
        // inside their JVMs and not recorded); Redis keeps its data, so they are checked for overlap.
        tally.check(new HistoryChecker(PausedHolder.OVERLAP, true), history, effects);
    }

    /** The canary's request: the trade number as Idempotency-Key, which it ignores. */
    private static void sendPlain(HttpClient http, String base, Repayment r) throws Exception {
        HttpRequest request = HttpRequest.newBuilder(URI.create(base + "/notes/" + r.note + "/repayments"))
                .header("Idempotency-Key", r.key)
                .timeout(Duration.ofSeconds(30))
                .POST(HttpRequest.BodyPublishers.ofString(String.valueOf(r.amount)))
                .build();
        http.send(request, HttpResponse.BodyHandlers.ofString()); // the canary is judged by the database alone
    }

    private static void checkCanary(PrivateDatabase db, List<Repayment> storm, Tally tally) throws Exception {
        Map<String, Long> sums = new HashMap<>();
        Map<String, Integer> rows = new HashMap<>();
        try (Connection connection = db.dataSource().getConnection();
                PreparedStatement select =
                        connection.prepareStatement("SELECT request_key, account, amount FROM fault_plain_repayment");
                ResultSet row = select.executeQuery()) {
            while (row.next()) {
                rows.merge(row.getString(1), 1, Integer::sum);
                sums.merge(row.getString(2), row.getLong(3), Long::sum);
            }
        }
        for (int n = 1; n <= NOTES; n++) {
            String note = note(n);
            long expected = PLAIN_PRINCIPAL - sums.getOrDefault(note, 0L);
            long balance = db.queryLong("SELECT balance FROM fault_plain_note WHERE no = '" + note + "'");
            if (balance != expected) {
                tally.canary("without lock note " + note + " has balance " + balance + ", but principal - repayments = "
                        + expected + " (lost updates)");
            }
        }
        storm.stream()
                .filter(r -> !r.duplicate)
                .filter(r -> rows.getOrDefault(r.key, 0) > 1)
                .forEach(r -> tally.canary(
                        "without idempotency trade " + r.key + " was booked " + rows.get(r.key) + " times"));
    }
}
