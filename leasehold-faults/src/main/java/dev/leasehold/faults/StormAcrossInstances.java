package dev.leasehold.faults;

import dev.leasehold.jdbc.Database;
import dev.leasehold.testkit.TestServices;
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
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;

/**
 * 8. Two service JVMs ({@link LoanStandIn}, a minimal stand-in for the reference loan service) on
 * one PostgreSQL schema and one Redis key prefix, under a storm of repayments over five notes from
 * twelve clients, a third of them duplicates of an earlier request sent to either instance.
 * Protected: conservation per note (balance = principal - the repayments booked), every request
 * booked once, every duplicate answered with the original receipt, no 5xx, no answer slower than 5
 * s. Canary: the same storm on the endpoint without lock or idempotency: lost updates and double
 * bookings.
 */
final class StormAcrossInstances implements Scenario {

    static final String TITLE = "8 storm across instances";
    private static final long PRINCIPAL = 1_000_000;
    private static final int NOTES = 5;
    private static final int CLIENTS = 12;
    private static final Duration STALL = Duration.ofSeconds(5);

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
        String redis = TestServices.redis().uri();
        String prefix = "faults-" + UUID.randomUUID().toString().substring(0, 8) + ":";
        try (PrivateDatabase db = PrivateDatabase.create(Database.POSTGRESQL)) {
            for (String kind : List.of("", "plain_")) {
                db.execute(
                        "CREATE TABLE fault_" + kind
                                + "note (no VARCHAR(32) NOT NULL PRIMARY KEY, balance BIGINT NOT NULL)",
                        Bookings.createTable("fault_" + kind + "repayment"));
                for (int n = 0; n < NOTES; n++) {
                    db.execute("INSERT INTO fault_" + kind + "note (no, balance) VALUES ('N" + n + "', " + PRINCIPAL
                            + ")");
                }
            }
            List<ChildJvm> instances = new ArrayList<>();
            List<String> bases = new ArrayList<>();
            try {
                for (int i = 0; i < 2; i++) {
                    int port = Processes.freePort();
                    ChildJvm instance = ChildJvm.start(
                            "loan-instance-" + i,
                            LoanStandIn.class,
                            List.of(),
                            Map.of(),
                            String.valueOf(port),
                            redis,
                            prefix,
                            db.spec().encode());
                    instances.add(instance);
                    instance.expect("READY", Duration.ofSeconds(60));
                    bases.add("http://127.0.0.1:" + port);
                }
                List<Repayment> storm = storm(profile.times(200));
                Map<String, String> receipts = run(storm, bases, "", tally, true);
                run(storm, bases, "/plain", tally, false);
                checkProtected(db, storm, receipts, tally);
                checkCanary(db, storm, tally);
                tally.note("requests: " + storm.size() + " ("
                        + storm.stream().filter(r -> r.duplicate).count() + " duplicates) per storm, " + CLIENTS
                        + " clients, " + NOTES + " notes, instances " + bases);
            } finally {
                instances.forEach(ChildJvm::close);
            }
        }
        return tally.outcome();
    }

    /** One repayment; a duplicate repeats an earlier one's key, note and amount. */
    record Repayment(String key, String note, long amount, boolean duplicate) {}

    private static List<Repayment> storm(int size) {
        Random random = new Random();
        List<Repayment> storm = new ArrayList<>();
        for (int i = 0; i < size; i++) {
            if (i > 10 && random.nextInt(3) == 0) {
                Repayment original = storm.get(random.nextInt(storm.size()));
                storm.add(new Repayment(original.key, original.note, original.amount, true));
            } else {
                storm.add(new Repayment("r" + i, "N" + random.nextInt(NOTES), 1 + random.nextInt(9), false));
            }
        }
        return storm;
    }

    /** Sends the storm from the clients; returns the first receipt of each key. */
    private static Map<String, String> run(
            List<Repayment> storm, List<String> bases, String path, Tally tally, boolean guarded) throws Exception {
        HttpClient http = HttpClient.newBuilder()
                .version(HttpClient.Version.HTTP_1_1)
                .connectTimeout(Duration.ofSeconds(5))
                .build();
        Map<String, String> receipts = new ConcurrentHashMap<>();
        ExecutorService clients = Executors.newFixedThreadPool(CLIENTS);
        try {
            List<Future<?>> sent = new ArrayList<>();
            for (int i = 0; i < storm.size(); i++) {
                Repayment r = storm.get(i);
                String base = bases.get(i % bases.size());
                sent.add(clients.submit(() -> {
                    send(http, base + path, r, receipts, tally, guarded);
                    return null;
                }));
            }
            for (Future<?> f : sent) {
                f.get(120, TimeUnit.SECONDS);
            }
        } finally {
            clients.shutdownNow();
        }
        return receipts;
    }

    private static void send(
            HttpClient http, String base, Repayment r, Map<String, String> receipts, Tally tally, boolean guarded)
            throws Exception {
        HttpRequest request = HttpRequest.newBuilder(URI.create(base + "/notes/" + r.note + "/repayments"))
                .header("Idempotency-Key", r.key)
                .timeout(Duration.ofSeconds(30))
                .POST(HttpRequest.BodyPublishers.ofString(String.valueOf(r.amount)))
                .build();
        long deadline = System.nanoTime() + Duration.ofSeconds(60).toNanos();
        while (true) {
            long start = System.nanoTime();
            HttpResponse<String> response = http.send(request, HttpResponse.BodyHandlers.ofString());
            Duration took = Duration.ofNanos(System.nanoTime() - start);
            if (!guarded) {
                return; // the canary is judged by the database alone
            }
            tally.operation();
            tally.stall(took);
            if (took.compareTo(STALL) > 0) {
                tally.violation("a repayment of " + r.note + " took " + took.toMillis() + " ms");
            }
            int status = response.statusCode();
            if (status >= 500) {
                tally.violation("repayment " + r.key + " was answered " + status + ": " + response.body());
                return;
            }
            if (status == 200) {
                String first = receipts.putIfAbsent(r.key, response.body());
                if (first != null && !first.equals(response.body())) {
                    tally.violation("duplicate of " + r.key + " answered receipt " + response.body()
                            + ", not the original " + first);
                }
                return;
            }
            if (status != 409 || System.nanoTime() > deadline) {
                tally.violation("repayment " + r.key + " was answered " + status + ": " + response.body());
                return;
            }
            // busy or in progress: the client retries, as the 409 asks
        }
    }

    private static void checkProtected(
            PrivateDatabase db, List<Repayment> storm, Map<String, String> receipts, Tally tally) throws Exception {
        Booked booked = booked(db, "");
        for (int n = 0; n < NOTES; n++) {
            String note = "N" + n;
            long expected = PRINCIPAL - booked.sumByNote.getOrDefault(note, 0L);
            long balance = db.queryLong("SELECT balance FROM fault_note WHERE no = '" + note + "'");
            if (balance != expected) {
                tally.violation(
                        "note " + note + " has balance " + balance + ", but principal - repayments = " + expected);
            }
        }
        for (Repayment r : storm) {
            if (r.duplicate) {
                continue;
            }
            int rows = booked.rowsByKey.getOrDefault(r.key, List.of()).size();
            if (rows != 1) {
                tally.violation("repayment " + r.key + " was booked " + rows + " times");
            } else if (!booked.rowsByKey.get(r.key).get(0).equals(receipts.get(r.key))) {
                tally.violation("repayment " + r.key + " was answered with a receipt that is not booked");
            }
        }
    }

    private static void checkCanary(PrivateDatabase db, List<Repayment> storm, Tally tally) throws Exception {
        Booked booked = booked(db, "plain_");
        for (int n = 0; n < NOTES; n++) {
            String note = "N" + n;
            long expected = PRINCIPAL - booked.sumByNote.getOrDefault(note, 0L);
            long balance = db.queryLong("SELECT balance FROM fault_plain_note WHERE no = '" + note + "'");
            if (balance != expected) {
                tally.canary("without lock note " + note + " has balance " + balance + ", but principal - repayments = "
                        + expected + " (lost updates)");
            }
        }
        long doubled = storm.stream()
                .filter(r -> !r.duplicate)
                .filter(r -> booked.rowsByKey.getOrDefault(r.key, List.of()).size() > 1)
                .count();
        for (int i = 0; i < doubled; i++) {
            tally.canary("without idempotency a duplicated repayment was booked twice");
        }
    }

    private record Booked(Map<String, Long> sumByNote, Map<String, List<String>> rowsByKey) {}

    private static Booked booked(PrivateDatabase db, String kind) throws Exception {
        Map<String, Long> sums = new HashMap<>();
        Map<String, List<String>> rows = new HashMap<>();
        try (Connection connection = db.dataSource().getConnection();
                PreparedStatement select = connection.prepareStatement(
                        "SELECT request_key, account, amount, receipt FROM fault_" + kind + "repayment");
                ResultSet row = select.executeQuery()) {
            while (row.next()) {
                sums.merge(row.getString(2), row.getLong(3), Long::sum);
                rows.computeIfAbsent(row.getString(1), k -> new ArrayList<>()).add(row.getString(4));
            }
        }
        return new Booked(sums, rows);
    }
}
