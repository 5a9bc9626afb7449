package dev.leasehold.faults;

import dev.leasehold.LockKey;
import dev.leasehold.LockService;
import dev.leasehold.faults.History.Kind;
import dev.leasehold.faults.History.Result;
import dev.leasehold.jdbc.Database;
import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * 6. A service JVM serving idempotent payments is killed ({@code kill -9}) during a storm of
 * retried requests: at random moments, and once right after a business commit, before the answer.
 * The client retries every unanswered request (on the restarted service) and sends answered ones
 * again as impatient clients do. Protected: every request paid exactly once, every acknowledged
 * receipt present, every answer to one key the same receipt. Canary: a payment endpoint without
 * idempotency, retried the same way after each kill: paid twice.
 *
 * <p>Two services: {@code request records}, the Spring Boot service {@link PaymentService} whose
 * endpoint is an {@code @Idempotent} method (the payment commits in one transaction with the
 * request's SUCCESS mark), reached over HTTP with an {@code Idempotency-Key} header; and {@code
 * side effects}, {@link ServiceMain}, where the payment is a side effect of the request, committed
 * with the effect's mark. Each idempotent payment holds its account's session lease ({@code
 * session:a0} to {@code a3}) on the SQL lease store of the private schema, and a {@link Workload}
 * in this JVM takes those keys on the same store through the storm, so that its grants meet the
 * services' and the leases a killed service left behind; its operations are in the row's history
 * (the services' grants are not).
 */
final class CrashedService implements Scenario {

    static final String TITLE = "6 crashed service";
    static final String REQUESTS = "postgresql, request records";
    static final String EFFECTS = "postgresql, side effects";
    private static final Duration STALE_AFTER = Duration.ofMillis(1000);
    /** The lease of an account's session, which each idempotent payment holds while it runs. */
    private static final Duration SESSION_LEASE = Duration.ofMillis(1000);
    /** The accounts paid into: {@code a0} to {@code a3}, by the request key's hash. */
    private static final int ACCOUNTS = 4;

    private static final int IN_FLIGHT = 8;

    @Override
    public String title() {
        return TITLE;
    }

    @Override
    public List<String> backends() {
        return List.of(REQUESTS, EFFECTS);
    }

    @Override
    public Outcome run(String backend, Profile profile) throws Exception {
        Tally tally = new Tally(TITLE, backend);
        try (PrivateDatabase db = PrivateDatabase.create(Database.POSTGRESQL)) {
            for (String table : List.of("fault_payment", "fault_plain_payment")) {
                db.execute(Bookings.createTable(table));
            }
            Workload.createTable(db);
            Storm storm = new Storm(
                    backend.equals(EFFECTS) ? StdinService.starter(db) : HttpService.starter(db), db, profile, tally);
            // The workload contends for the sessions the services' payments lease, on the same
            // store: its grants interleave with the services' and meet the leases of killed ones.
            List<LockKey> sessions = new ArrayList<>();
            for (int a = 0; a < ACCOUNTS; a++) {
                sessions.add(LockKey.of("session", "a" + a));
            }
            try (Library.Store store = Library.jdbcStore(db.dataSource(), Database.POSTGRESQL);
                    LockService locks = Library.locks(store.store())) {
                Workload workload =
                        new Workload("W", locks, db.dataSource(), storm.history, "crashed-", SESSION_LEASE, profile);
                try {
                    workload.contend(sessions);
                    storm.run();
                } finally {
                    workload.close();
                }
                tally.note("workload: " + workload.operations() + " operations; acquires of the payments' sessions "
                        + sessions.stream().map(LockKey::render).toList() + ": " + workload.contendedGranted()
                        + " granted, " + workload.contendedRefused() + " refused (held past the 200 ms wait)");
            }
            check(db, storm, tally);
        }
        return tally.outcome();
    }

    private static void check(PrivateDatabase db, Storm storm, Tally tally) throws Exception {
        Map<String, List<String>> paid = payments(db, "fault_payment");
        Map<String, List<String>> plain = payments(db, "fault_plain_payment");
        // Each acknowledged payment's key must be booked once, and its receipt too: the history
        // checker's effects (so one receipt per key, and every acknowledged receipt present).
        Map<String, Long> effects = new HashMap<>();
        paid.forEach((key, receipts) -> {
            effects.put(key, (long) receipts.size());
            receipts.forEach(receipt -> effects.merge(key + "#" + receipt, 1L, Long::sum));
        });
        for (String key : storm.keys) {
            List<String> receipts = paid.getOrDefault(key, List.of());
            if (!storm.answers.containsKey(key) && receipts.size() != 1) {
                tally.violation("request " + key + ", never acknowledged, was paid " + receipts.size() + " times");
            }
            int plainPaid = plain.getOrDefault(key, List.of()).size();
            if (plainPaid > 1) {
                tally.canary("the endpoint without idempotency paid " + key + " " + plainPaid + " times");
            }
        }
        tally.note("requests: " + storm.keys.size() + ", sends: " + tally.operationCount() + ", kills: " + storm.kills
                + " (one right after a business commit), sends in flight at a kill: " + storm.unansweredAtKills
                + ", replies: " + storm.replies);
        effects.putAll(Workload.effectCounts(db.dataSource()));
        // grants in the history are the workload's (the services' are not recorded); the store
        // keeps its data through the kills, so they are checked for overlap
        tally.check(new HistoryChecker(PausedHolder.OVERLAP, true), storm.history, effects);
    }

    private static Map<String, List<String>> payments(PrivateDatabase db, String table) throws Exception {
        Map<String, List<String>> byKey = new HashMap<>();
        try (Connection connection = db.dataSource().getConnection();
                PreparedStatement select = connection.prepareStatement("SELECT request_key, receipt FROM " + table);
                ResultSet rows = select.executeQuery()) {
            while (rows.next()) {
                byKey.computeIfAbsent(rows.getString(1), k -> new ArrayList<>()).add(rows.getString(2));
            }
        }
        return byKey;
    }

    /** The client side: sends, retries, kills and restarts. Single-threaded. */
    private static final class Storm {
        final List<String> keys = new ArrayList<>();
        final Map<String, Set<String>> answers = new HashMap<>();
        final Map<String, Integer> replies = new TreeMap<>();
        /** Each acknowledged payment, as two effects: its request key, and the key with its receipt. */
        final History history = new History();

        int kills;
        int unansweredAtKills;

        private final Starter starter;
        private final Tally tally;
        private final Random random = new Random();
        private final Set<String> acked = new HashSet<>();
        private final Set<String> plainAcked = new HashSet<>();
        private final Map<String, Integer> duplicatesLeft = new HashMap<>();
        private final Map<String, Long> inFlight = new HashMap<>(); // "R:key" / "P:key" -> sent at
        private final Map<String, Long> retryAt = new HashMap<>();
        private final List<Integer> killAtAcks = new ArrayList<>();
        private Service service;
        private int starts;

        Storm(Starter starter, PrivateDatabase db, Profile profile, Tally tally) {
            this.starter = starter;
            this.tally = tally;
            // each request is sent about four times (three idempotent, one plain) and more when
            // retried: in the long profile enough requests for the profile's least operations
            int requests = Math.max(profile.times(40), profile.minOperations() / 4);
            for (int i = 0; i < requests; i++) {
                keys.add("k" + i);
                duplicatesLeft.put("k" + i, 2);
            }
            int randomKills = profile.times(2);
            for (int i = 0; i < randomKills; i++) {
                killAtAcks.add(requests / 4 + random.nextInt(requests * 3 / 4));
            }
            killAtAcks.sort(Integer::compare);
        }

        void run() throws Exception {
            start();
            Duration giveUp = Duration.ofSeconds(120L * Math.max(1, keys.size() / 200));
            long deadline = System.nanoTime() + giveUp.toNanos();
            try {
                targetedKill();
                while (!done()) {
                    if (System.nanoTime() > deadline) {
                        throw new IllegalStateException("the storm did not finish in " + giveUp.toSeconds() + " s: "
                                + (keys.size() - acked.size()) + " requests unanswered\n" + service.logTail());
                    }
                    send();
                    String reply = service.next(Duration.ofMillis(50));
                    if (reply != null) {
                        handle(reply);
                    } else if (!service.alive()) {
                        restart();
                    }
                    if (!killAtAcks.isEmpty() && acked.size() >= killAtAcks.get(0)) {
                        killAtAcks.remove(0);
                        restart();
                    }
                }
            } finally {
                service.close();
            }
        }

        /** A request and a plain payment of one key, the service killed right after their commits. */
        private void targetedKill() {
            String key = keys.get(0);
            sendOne("REQ", key, " hang");
            sendOne("PLAIN", key, " hang");
            int committed = 0;
            while (committed < 2) {
                String reply = service.next(Duration.ofSeconds(30));
                if (reply == null) {
                    throw new IllegalStateException("no commit of " + key + " reported\n" + service.logTail());
                }
                if (reply.startsWith("COMMITTED ")) {
                    committed++;
                } else {
                    handle(reply);
                    if (reply.startsWith("RETRY " + key + " ")) {
                        // refused before its commit (its session busy, the workload holding it): again
                        sendOne("REQ", key, " hang");
                    }
                }
            }
            restart();
        }

        private boolean done() {
            return acked.size() == keys.size()
                    && plainAcked.size() == keys.size()
                    && inFlight.isEmpty()
                    && duplicatesLeft.values().stream().allMatch(d -> d == 0);
        }

        private void send() {
            long now = System.nanoTime();
            for (String key : keys) {
                if (inFlight.size() >= IN_FLIGHT) {
                    return;
                }
                if (retryAt.getOrDefault(key, 0L) > now) {
                    continue;
                }
                if (!inFlight.containsKey("R:" + key) && (!acked.contains(key) || duplicatesLeft.get(key) > 0)) {
                    if (acked.contains(key)) {
                        duplicatesLeft.merge(key, -1, Integer::sum);
                    }
                    sendOne("REQ", key, "");
                }
                if (!inFlight.containsKey("P:" + key) && !plainAcked.contains(key)) {
                    sendOne("PLAIN", key, "");
                }
            }
        }

        private void sendOne(String command, String key, String flag) {
            inFlight.put(command.charAt(0) + ":" + key, System.nanoTime());
            service.send(command, key, "a" + Math.floorMod(key.hashCode(), ACCOUNTS), 10, !flag.isEmpty());
            tally.operation();
        }

        private void handle(String reply) {
            String[] r = reply.split(" ", 3);
            if (r[0].equals("COMMITTED")) {
                return;
            }
            replies.merge(r[0], 1, Integer::sum);
            String key = r[1];
            boolean plain = r[0].equals("PAID");
            Long sentAt = inFlight.remove((plain ? "P:" : "R:") + key);
            if (sentAt != null) {
                tally.stallSince(sentAt);
            }
            switch (r[0]) {
                case "PAID" -> plainAcked.add(key);
                case "ACK" -> {
                    acked.add(key);
                    answers.computeIfAbsent(key, k -> new HashSet<>()).add(r[2]);
                    long invoked = sentAt != null ? sentAt : History.now();
                    for (String effect : List.of(key, key + "#" + r[2])) {
                        history.add("client", Kind.WRITE, key, null, invoked, 0, Result.OK, "fault_payment", effect);
                    }
                }
                case "RETRY", "ERROR" ->
                    retryAt.put(key, System.nanoTime() + Duration.ofMillis(100).toNanos());
                case "REFUSED" -> {
                    // a final answer that is neither a receipt nor "in progress" (a 4xx): wrong
                    tally.violation("request " + key + " was refused: " + r[2]);
                    acked.add(key);
                }
                default -> throw new IllegalStateException("unexpected reply " + reply);
            }
        }

        private void start() throws Exception {
            service = starter.start(starts++);
        }

        /**
         * kill -9 and start again; the answers that came before the kill count, whatever was still
         * in flight has an unknown outcome and is retried.
         */
        private void restart() {
            for (String reply; (reply = service.next(Duration.ZERO)) != null; ) {
                if (!reply.startsWith("COMMITTED ")) {
                    handle(reply);
                }
            }
            service.kill();
            kills++;
            history.fault("kill -9 the service");
            unansweredAtKills += inFlight.size();
            inFlight.clear();
            try {
                start();
            } catch (Exception e) {
                throw new IllegalStateException("the service did not restart", e);
            }
        }
    }

    /**
     * A running service JVM as the storm sees it: payments sent, replies read as lines ({@code ACK
     * key receipt}, {@code RETRY key why}, {@code ERROR key why}, {@code REFUSED key why}, {@code PAID
     * key receipt}, {@code COMMITTED key}; see {@link ServiceMain}).
     */
    private interface Service {
        /** Sends {@code REQ} (idempotent) or {@code PLAIN} (the canary); {@code hang}: stop after its commit. */
        void send(String command, String key, String account, long amount, boolean hang);

        /** The next reply, or null if none comes in time. */
        String next(Duration timeout);

        boolean alive();

        /** {@code kill -9}, waiting until it is gone. */
        void kill();

        String logTail();

        void close();
    }

    /** Starts the n-th service JVM of a storm, ready to serve. */
    @FunctionalInterface
    private interface Starter {
        Service start(int n) throws Exception;
    }

    /** A service in a child JVM. */
    private abstract static class ChildService implements Service {
        final ChildJvm child;

        ChildService(ChildJvm child) {
            this.child = child;
        }

        @Override
        public boolean alive() {
            return child.process().isAlive();
        }

        @Override
        public void kill() {
            child.kill();
        }

        @Override
        public String logTail() {
            return child.logTail();
        }

        @Override
        public void close() {
            child.close();
        }
    }

    /** {@link ServiceMain} on stdin and stdout: the side-effects service. */
    private static final class StdinService extends ChildService {

        private StdinService(ChildJvm child) {
            super(child);
        }

        static Starter starter(PrivateDatabase db) {
            return n -> {
                ChildJvm child = ChildJvm.start(
                        "crashed-service-effect-" + n,
                        ServiceMain.class,
                        List.of(),
                        Map.of(),
                        db.spec().encode(),
                        String.valueOf(STALE_AFTER.toMillis()),
                        String.valueOf(SESSION_LEASE.toMillis()));
                try {
                    child.expect("READY", Duration.ofSeconds(60));
                } catch (RuntimeException e) {
                    child.close();
                    throw e;
                }
                return new StdinService(child);
            };
        }

        @Override
        public void send(String command, String key, String account, long amount, boolean hang) {
            child.send(command + " " + key + " " + account + " " + amount + (hang ? " hang" : ""));
        }

        @Override
        public String next(Duration timeout) {
            return child.next(timeout);
        }
    }

    /**
     * {@link PaymentService}, the Spring Boot service, over HTTP on a loopback port that stays the
     * same across restarts: each answer becomes a reply line; an I/O failure (the connection reset by
     * a kill, or refused) is an {@code ERROR}, retried. Its {@code COMMITTED} lines come on stdout.
     */
    private static final class HttpService extends ChildService {

        private static final Pattern RECEIPT = Pattern.compile("\"receipt\"\\s*:\\s*\"([^\"]+)\"");

        private final HttpClient http;
        private final URI base;
        private final BlockingQueue<String> replies = new LinkedBlockingQueue<>();

        private HttpService(ChildJvm child, HttpClient http, URI base) {
            super(child);
            this.http = http;
            this.base = base;
            Thread forwarder = new Thread(
                    () -> {
                        while (child.process().isAlive()) {
                            String reply = child.next(Duration.ofSeconds(1));
                            if (reply != null) {
                                replies.add(reply);
                            }
                        }
                    },
                    "child-" + child.name() + "-replies");
            forwarder.setDaemon(true);
            forwarder.start();
        }

        static Starter starter(PrivateDatabase db) {
            HttpClient http = HttpClient.newBuilder()
                    .version(HttpClient.Version.HTTP_1_1)
                    .connectTimeout(Duration.ofSeconds(2))
                    .build();
            int port = Processes.freePort();
            URI base = URI.create("http://127.0.0.1:" + port);
            PrivateDatabase.Spec spec = db.spec();
            return n -> {
                ChildJvm child = ChildJvm.start(
                        "crashed-service-request-" + n,
                        PaymentService.class,
                        List.of("-Xmx256m"),
                        Map.of(),
                        "--server.port=" + port,
                        "--server.address=127.0.0.1",
                        "--spring.main.banner-mode=off",
                        "--spring.datasource.url=" + spec.url(),
                        "--spring.datasource.username=" + spec.user(),
                        "--spring.datasource.password=" + spec.password(),
                        "--spring.datasource.hikari.schema=" + spec.name(),
                        "--spring.datasource.hikari.maximum-pool-size=" + (IN_FLIGHT + 4),
                        "--leasehold.jdbc.initialize-schema=never",
                        "--leasehold.lock.lease-time=" + SESSION_LEASE.toMillis() + "ms",
                        "--leasehold.idempotency.stale-after=" + STALE_AFTER.toMillis() + "ms");
                try {
                    awaitReady(child, http, base.resolve("/ready"));
                } catch (RuntimeException | InterruptedException e) {
                    child.close();
                    throw e;
                }
                return new HttpService(child, http, base);
            };
        }

        /** Asks {@code GET /ready} until it answers 200; between tries, waits for the JVM to exit. */
        private static void awaitReady(ChildJvm child, HttpClient http, URI ready) throws InterruptedException {
            long deadline = System.nanoTime() + Duration.ofSeconds(90).toNanos();
            HttpRequest request =
                    HttpRequest.newBuilder(ready).timeout(Duration.ofSeconds(2)).build();
            while (true) {
                try {
                    if (http.send(request, HttpResponse.BodyHandlers.discarding())
                                    .statusCode()
                            == 200) {
                        return;
                    }
                } catch (IOException e) {
                    // not listening yet
                }
                if (child.process().waitFor(100, TimeUnit.MILLISECONDS)) {
                    throw new IllegalStateException("the service exited with "
                            + child.process().exitValue() + " before it was ready\n" + child.logTail());
                }
                if (System.nanoTime() > deadline) {
                    throw new IllegalStateException("the service was not ready in 90 s\n" + child.logTail());
                }
            }
        }

        @Override
        public void send(String command, String key, String account, long amount, boolean hang) {
            boolean plain = command.equals("PLAIN");
            HttpRequest request = HttpRequest.newBuilder(base.resolve(plain ? "/plain-payments" : "/payments"))
                    .timeout(Duration.ofSeconds(30))
                    .header("Content-Type", "application/json")
                    .header("Idempotency-Key", key)
                    .header(PaymentService.CRASH_AFTER_COMMIT, String.valueOf(hang))
                    .POST(HttpRequest.BodyPublishers.ofString(
                            "{\"account\":\"" + account + "\",\"amount\":" + amount + "}"))
                    .build();
            http.sendAsync(request, HttpResponse.BodyHandlers.ofString())
                    .whenComplete((response, failure) -> replies.add(reply(plain, key, response, failure)));
        }

        private static String reply(boolean plain, String key, HttpResponse<String> response, Throwable failure) {
            if (failure != null) {
                return "ERROR " + key + " " + failure;
            }
            int status = response.statusCode();
            String body = response.body().replace('\n', ' ');
            Matcher receipt = RECEIPT.matcher(body);
            if (status == 200 && receipt.find()) {
                return (plain ? "PAID " : "ACK ") + key + " " + receipt.group(1);
            }
            if (status == 409) {
                return "RETRY " + key + " 409 " + body;
            }
            if (status >= 500 || plain) {
                return "ERROR " + key + " " + status + " " + body;
            }
            return "REFUSED " + key + " " + status + " " + body;
        }

        @Override
        public String next(Duration timeout) {
            try {
                return replies.poll(timeout.toNanos(), TimeUnit.NANOSECONDS);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                return null;
            }
        }
    }
}
