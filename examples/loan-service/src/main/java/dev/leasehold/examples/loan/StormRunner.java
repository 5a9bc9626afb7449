package dev.leasehold.examples.loan;

import dev.leasehold.examples.loan.Domain.Conservation;
import java.math.BigDecimal;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.springframework.http.MediaType;
import org.springframework.http.client.SimpleClientHttpRequestFactory;
import org.springframework.web.client.RestClient;

/**
 * Fires a mixed storm of repayments at a running service over HTTP, spread over some notes: new
 * repayments, exact duplicates racing their originals, amounts above the balance, malformed
 * bodies; and reports what came back and whether every cent is accounted for.
 */
public final class StormRunner {

    /** What the storm is made of, in percent of the requests. */
    public record Mix(int duplicatePercent, int overBalancePercent, int malformedPercent) {
        /** The mix: 30 % exact duplicates, 10 % over the balance, 5 % malformed bodies. */
        public static final Mix DEFAULT = new Mix(30, 10, 5);
    }

    /**
     * What the storm came to.
     *
     * @param requests requests sent
     * @param accepted distinct repayments accepted
     * @param duplicatesCollapsed duplicates answered with the original receipt
     * @param refusedOverBalance 422 answers to amounts above the balance
     * @param malformed 400 answers to malformed bodies
     * @param busy 409 answers (lock busy, or a conflict in bypass mode)
     * @param serverErrors 5xx answers
     * @param other anything else (a transport failure, an unexpected status, a trade accepted twice)
     * @param newFlows flows the storm added to the notes
     * @param conserved whether every note's outstanding = principal + charges − accepted repayments
     */
    public record Report(
            int notes,
            int threads,
            int requests,
            int accepted,
            int duplicatesCollapsed,
            int refusedOverBalance,
            int malformed,
            int busy,
            int serverErrors,
            int other,
            BigDecimal acceptedAmount,
            BigDecimal repaidOnNotes,
            long newFlows,
            boolean conserved,
            int maxInside,
            long millis) {

        /** Nothing lost, nothing doubled, no 5xx. */
        public boolean ok() {
            return conserved
                    && serverErrors == 0
                    && other == 0
                    && newFlows == accepted
                    && acceptedAmount.compareTo(repaidOnNotes) == 0;
        }

        /** The report as a newcomer reads it. */
        public String text() {
            return String.join(
                    "\n",
                    "storm: " + requests + " requests over " + notes + " demo notes from " + threads + " threads",
                    "  accepted repayments    " + accepted + " (new flows recorded: " + newFlows + ")",
                    "  duplicates collapsed   " + duplicatesCollapsed,
                    "  over balance refused   " + refusedOverBalance,
                    "  malformed refused      " + malformed,
                    "  busy/conflict answers  " + busy,
                    "  5xx answers            " + serverErrors,
                    "  other failures         " + other,
                    "  accepted amount        " + acceptedAmount,
                    "  repaid on the notes    " + repaidOnNotes,
                    "  max inside at once     " + (maxInside < 0 ? "n/a (remote)" : String.valueOf(maxInside)),
                    "  conservation           " + (ok() ? "OK" : "BROKEN"));
        }
    }

    private StormRunner() {}

    /** One request of the storm, decided before it starts (a fixed seed makes the same storm). */
    private record Shot(String note, String trade, String body, char kind) {}

    /** Runs the storm; {@code authorization} is the Authorization header every request carries. */
    public static Report run(
            String baseUrl,
            String authorization,
            String tenant,
            List<String> notes,
            int requests,
            int threads,
            Mix mix,
            long seed) {
        SimpleClientHttpRequestFactory factory = new SimpleClientHttpRequestFactory();
        factory.setConnectTimeout(5_000);
        factory.setReadTimeout(30_000);
        RestClient client = RestClient.builder()
                .baseUrl(baseUrl)
                .requestFactory(factory)
                .defaultHeader("Authorization", authorization)
                .build();
        String prefix = "/api/tenants/" + tenant + "/notes/";
        String run = Long.toString(System.nanoTime(), 36);
        long flowsBefore = 0;
        BigDecimal repaidBefore = BigDecimal.ZERO;
        for (String note : notes) {
            Conservation c = conservation(client, prefix, note);
            flowsBefore += c.acceptedFlows();
            repaidBefore = repaidBefore.add(c.acceptedRepayments());
        }
        List<Shot> shots = plan(notes, requests, mix, seed, run);
        AtomicInteger next = new AtomicInteger();
        Map<Character, AtomicInteger> counts = new ConcurrentHashMap<>();
        for (char c : "ADOMBSX".toCharArray()) {
            counts.put(c, new AtomicInteger());
        }
        Map<String, BigDecimal> accepted = new ConcurrentHashMap<>();
        CyclicBarrier start = new CyclicBarrier(threads);
        ExecutorService pool = Executors.newFixedThreadPool(threads);
        long began = System.nanoTime();
        try {
            List<Future<?>> done = new ArrayList<>();
            for (int t = 0; t < threads; t++) {
                done.add(pool.submit(() -> {
                    start.await();
                    for (int i = next.getAndIncrement(); i < shots.size(); i = next.getAndIncrement()) {
                        Shot shot = shots.get(i);
                        counts.get(send(client, prefix, shot, accepted)).incrementAndGet();
                    }
                    return null;
                }));
            }
            for (Future<?> f : done) {
                f.get(10, TimeUnit.MINUTES);
            }
        } catch (Exception e) {
            throw new IllegalStateException("storm did not finish: " + e, e);
        } finally {
            pool.shutdownNow();
        }
        long millis = (System.nanoTime() - began) / 1_000_000;
        long flowsAfter = 0;
        BigDecimal repaidAfter = BigDecimal.ZERO;
        boolean conserved = true;
        for (String note : notes) {
            Conservation c = conservation(client, prefix, note);
            flowsAfter += c.acceptedFlows();
            repaidAfter = repaidAfter.add(c.acceptedRepayments());
            conserved &= c.holds();
        }
        return new Report(
                notes.size(),
                threads,
                shots.size(),
                accepted.size(),
                counts.get('D').get(),
                counts.get('O').get(),
                counts.get('M').get(),
                counts.get('B').get(),
                counts.get('S').get(),
                counts.get('X').get(),
                accepted.values().stream().reduce(BigDecimal.ZERO, BigDecimal::add),
                repaidAfter.subtract(repaidBefore),
                flowsAfter - flowsBefore,
                conserved,
                -1,
                millis);
    }

    private static List<Shot> plan(List<String> notes, int requests, Mix mix, long seed, String run) {
        Random random = new Random(seed);
        List<Shot> shots = new ArrayList<>();
        List<Shot> originals = new ArrayList<>();
        for (int i = 0; i < requests; i++) {
            int roll = random.nextInt(100);
            String note = notes.get(random.nextInt(notes.size()));
            String trade = "S" + run + "-" + i;
            if (roll < mix.duplicatePercent() && !originals.isEmpty()) {
                // an exact duplicate of a recent original, racing it
                Shot original = originals.get(
                        Math.max(0, originals.size() - 1 - random.nextInt(Math.min(24, originals.size()))));
                shots.add(new Shot(original.note(), original.trade(), original.body(), 'd'));
            } else if (roll < mix.duplicatePercent() + mix.overBalancePercent()) {
                shots.add(new Shot(note, trade, body(trade, "99999999.00"), 'o'));
            } else if (roll < mix.duplicatePercent() + mix.overBalancePercent() + mix.malformedPercent()) {
                String[] broken = {
                    "{\"channel\":\"APP\",",
                    "{\"channel\":\"APP\",\"outTradeNo\":\"" + trade + "\",\"amount\":\"lots\"}",
                    "[]",
                    "{\"channel\":\"APP\",\"outTradeNo\":\"" + trade + "\",\"amount\":1,\"amount\":2}"
                };
                shots.add(new Shot(note, trade, broken[random.nextInt(broken.length)], 'm'));
            } else {
                Shot shot = new Shot(note, trade, body(trade, (1 + random.nextInt(9)) + ".00"), 'a');
                shots.add(shot);
                originals.add(shot);
            }
        }
        return shots;
    }

    private static String body(String trade, String amount) {
        return "{\"channel\":\"APP\",\"outTradeNo\":\"" + trade + "\",\"amount\":" + amount + "}";
    }

    private static Conservation conservation(RestClient client, String prefix, String note) {
        return client.get().uri(prefix + note + "/conservation").retrieve().body(Conservation.class);
    }

    /** Sends one shot; answers A accepted, D duplicate, O over balance, M malformed, B busy, S 5xx, X other. */
    private static char send(RestClient client, String prefix, Shot shot, Map<String, BigDecimal> accepted) {
        try {
            return client.post()
                    .uri(prefix + shot.note() + "/repayments")
                    .contentType(MediaType.APPLICATION_JSON)
                    .body(shot.body())
                    .exchange((request, response) -> {
                        int status = response.getStatusCode().value();
                        if (status == 200) {
                            if ("true".equals(response.getHeaders().getFirst(LoanController.DUPLICATE_HEADER))) {
                                return 'D';
                            }
                            String amount = shot.body().replaceAll(".*\"amount\":([0-9.]+)}", "$1");
                            // the same trade accepted twice would be a double debit
                            return accepted.putIfAbsent(shot.trade(), new BigDecimal(amount)) == null ? 'A' : 'X';
                        }
                        if (status == 409) {
                            return 'B';
                        }
                        if (status == 422 && shot.kind() == 'o') {
                            return 'O';
                        }
                        if (status == 400 && shot.kind() == 'm') {
                            return 'M';
                        }
                        return status >= 500 ? 'S' : 'X';
                    });
        } catch (RuntimeException e) {
            return 'X';
        }
    }
}
