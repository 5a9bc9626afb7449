package dev.leasehold.faults;

import dev.leasehold.jdbc.Database;
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

/**
 * 6. A service JVM ({@link ServiceMain}) serving idempotent payments is killed ({@code kill -9})
 * during a storm of retried requests: at random moments, and once right after a business commit,
 * before the answer. The client retries every unanswered request (on the restarted service) and
 * sends answered ones again as impatient clients do. Protected: every request paid exactly once,
 * every acknowledged receipt present, every answer to one key the same receipt. Canary: a payment
 * endpoint without idempotency, retried the same way after each kill: paid twice.
 *
 * <p>Two services: {@code request records}, where the payment commits in one transaction with the
 * request's SUCCESS mark (what {@code @Idempotent} does), and {@code side effects}, where the
 * payment is a side effect of the request, committed with the effect's mark.
 */
final class CrashedService implements Scenario {

    static final String TITLE = "6 crashed service";
    static final String REQUESTS = "postgresql, request records";
    static final String EFFECTS = "postgresql, side effects";
    private static final Duration STALE_AFTER = Duration.ofMillis(1000);
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
            Storm storm = new Storm(backend.equals(EFFECTS) ? "effect" : "request", db, profile, tally);
            storm.run();
            check(db, storm, tally);
        }
        return tally.outcome();
    }

    private static void check(PrivateDatabase db, Storm storm, Tally tally) throws Exception {
        Map<String, List<String>> paid = payments(db, "fault_payment");
        Map<String, List<String>> plain = payments(db, "fault_plain_payment");
        for (String key : storm.keys) {
            List<String> receipts = paid.getOrDefault(key, List.of());
            if (receipts.size() != 1) {
                tally.violation("request " + key + " was paid " + receipts.size() + " times");
            }
            Set<String> answered = storm.answers.getOrDefault(key, Set.of());
            if (answered.size() > 1) {
                tally.violation("request " + key + " was answered with " + answered.size() + " different receipts");
            }
            for (String receipt : answered) {
                if (!receipts.contains(receipt)) {
                    tally.violation("acknowledged receipt " + receipt + " of " + key + " is not in the database");
                }
            }
            int plainPaid = plain.getOrDefault(key, List.of()).size();
            if (plainPaid > 1) {
                tally.canary("the endpoint without idempotency paid " + key + " " + plainPaid + " times");
            }
        }
        tally.note("requests: " + storm.keys.size() + ", sends: " + tally.operationCount() + ", kills: " + storm.kills
                + " (one right after a business commit)");
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
        int kills;

        private final String mode;
        private final PrivateDatabase db;
        private final Tally tally;
        private final Random random = new Random();
        private final Set<String> acked = new HashSet<>();
        private final Set<String> plainAcked = new HashSet<>();
        private final Map<String, Integer> duplicatesLeft = new HashMap<>();
        private final Map<String, Long> inFlight = new HashMap<>(); // "R:key" / "P:key" -> sent at
        private final Map<String, Long> retryAt = new HashMap<>();
        private final List<Integer> killAtAcks = new ArrayList<>();
        private ChildJvm service;
        private int starts;

        Storm(String mode, PrivateDatabase db, Profile profile, Tally tally) {
            this.mode = mode;
            this.db = db;
            this.tally = tally;
            int requests = profile.times(40);
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
            long deadline = System.nanoTime() + Duration.ofSeconds(120).toNanos();
            try {
                targetedKill();
                while (!done()) {
                    if (System.nanoTime() > deadline) {
                        throw new IllegalStateException("the storm did not finish in 120 s: "
                                + (keys.size() - acked.size()) + " requests unanswered\n" + service.logTail());
                    }
                    send();
                    String reply = service.next(Duration.ofMillis(50));
                    if (reply != null) {
                        handle(reply);
                    } else if (!service.process().isAlive()) {
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
            service.send(command + " " + key + " a" + (key.hashCode() & 3) + " 10" + flag);
            tally.operation();
        }

        private void handle(String reply) {
            String[] r = reply.split(" ", 3);
            if (r[0].equals("COMMITTED")) {
                return;
            }
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
                }
                case "RETRY", "ERROR" ->
                    retryAt.put(key, System.nanoTime() + Duration.ofMillis(100).toNanos());
                default -> throw new IllegalStateException("unexpected reply " + reply);
            }
        }

        private void start() throws Exception {
            service = ChildJvm.start(
                    "crashed-service-" + mode + "-" + starts++,
                    ServiceMain.class,
                    List.of(),
                    Map.of(),
                    mode,
                    db.spec().encode(),
                    String.valueOf(STALE_AFTER.toMillis()));
            service.expect("READY", Duration.ofSeconds(60));
        }

        /** kill -9 and start again; whatever was in flight has an unknown outcome and is retried. */
        private void restart() {
            service.kill();
            kills++;
            inFlight.clear();
            try {
                start();
            } catch (Exception e) {
                throw new IllegalStateException("the service did not restart", e);
            }
        }
    }
}
