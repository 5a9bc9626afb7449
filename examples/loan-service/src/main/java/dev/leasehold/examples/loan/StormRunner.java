package dev.leasehold.examples.loan;

import dev.leasehold.examples.loan.Domain.Conservation;
import java.math.BigDecimal;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.springframework.http.HttpStatusCode;
import org.springframework.http.MediaType;
import org.springframework.web.client.RestClient;

/**
 * Fires a storm of repayments and duplicates at a running service over HTTP and reports what came
 * back: accepted, duplicates collapsed, busy answers, the final balance and the conservation check.
 */
public final class StormRunner {

    /**
     * What the storm came to.
     *
     * @param requests repayments sent
     * @param accepted distinct repayments accepted (201/200 first time)
     * @param duplicatesCollapsed duplicates answered with the original receipt
     * @param busy 409 answers (lock busy, or a conflict in bypass mode)
     * @param failed any other answer
     * @param conservation the note's balances afterwards
     * @param newFlows flows the storm added to the note
     * @param maxInside the most operations ever inside the note's critical section at once
     */
    public record Report(
            int requests,
            int accepted,
            int duplicatesCollapsed,
            int busy,
            int failed,
            BigDecimal acceptedAmount,
            Conservation conservation,
            long newFlows,
            int maxInside) {

        /** Whether nothing was lost or doubled: balances conserved, one flow per accepted repayment. */
        public boolean ok() {
            return conservation.expectedOutstanding().compareTo(conservation.outstanding()) == 0
                    && newFlows == accepted
                    && failed == 0;
        }

        /** The report as a newcomer reads it. */
        public String text() {
            return String.join(
                    "\n",
                    "storm on loan note " + conservation.borrowNo(),
                    "  requests sent          " + requests,
                    "  accepted repayments    " + accepted + " (new flows recorded: " + newFlows + ")",
                    "  duplicates collapsed   " + duplicatesCollapsed,
                    "  busy/conflict answers  " + busy,
                    "  other failures         " + failed,
                    "  accepted amount        " + acceptedAmount,
                    "  principal + charges    " + conservation.principal().add(conservation.charges()),
                    "  final outstanding      " + conservation.outstanding(),
                    "  expected outstanding   " + conservation.expectedOutstanding(),
                    "  max inside at once     " + (maxInside < 0 ? "n/a (remote)" : String.valueOf(maxInside)),
                    "  conservation           " + (ok() ? "OK" : "BROKEN"));
        }
    }

    private StormRunner() {}

    /**
     * Sends {@code threads × perThread} repayments of 1.00 to 9.00 at one note; every third one is
     * also sent by the previous thread, a duplicate racing the original.
     */
    public static Report run(
            String baseUrl,
            String authorization,
            String tenant,
            String borrowNo,
            int threads,
            int perThread,
            int maxInside) {
        RestClient client = RestClient.builder()
                .baseUrl(baseUrl)
                .defaultHeader("Authorization", authorization)
                .build();
        String path = "/api/tenants/" + tenant + "/notes/" + borrowNo + "/repayments";
        String run = Long.toString(System.nanoTime(), 36);
        long flowsBefore = conservation(client, tenant, borrowNo).acceptedFlows();
        AtomicInteger busy = new AtomicInteger();
        AtomicInteger failed = new AtomicInteger();
        AtomicInteger duplicates = new AtomicInteger();
        AtomicInteger requests = new AtomicInteger();
        Map<String, BigDecimal> accepted = new ConcurrentHashMap<>();
        CyclicBarrier start = new CyclicBarrier(threads);
        ExecutorService pool = Executors.newFixedThreadPool(threads);
        try {
            List<Future<?>> done = new ArrayList<>();
            for (int t = 0; t < threads; t++) {
                int thread = t;
                done.add(pool.submit(() -> {
                    start.await();
                    for (int i = 0; i < perThread; i++) {
                        String trade = "S" + run + "-" + thread + "-" + i;
                        BigDecimal amount =
                                BigDecimal.valueOf(1 + (thread + i) % 9).setScale(2);
                        send(client, path, trade, amount, requests, accepted, duplicates, busy, failed);
                        if (i % 3 == 0) {
                            // The next thread's trade too: a duplicate of what it sends itself.
                            int next = (thread + 1) % threads;
                            String twin = "S" + run + "-" + next + "-" + i;
                            BigDecimal twinAmount =
                                    BigDecimal.valueOf(1 + (next + i) % 9).setScale(2);
                            send(client, path, twin, twinAmount, requests, accepted, duplicates, busy, failed);
                        }
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
        Conservation conservation = conservation(client, tenant, borrowNo);
        BigDecimal total = accepted.values().stream().reduce(BigDecimal.ZERO, BigDecimal::add);
        return new Report(
                requests.get(),
                accepted.size(),
                duplicates.get(),
                busy.get(),
                failed.get(),
                total,
                conservation,
                conservation.acceptedFlows() - flowsBefore,
                maxInside);
    }

    private static Conservation conservation(RestClient client, String tenant, String borrowNo) {
        return client.get()
                .uri("/api/tenants/" + tenant + "/notes/" + borrowNo + "/conservation")
                .retrieve()
                .body(Conservation.class);
    }

    private static void send(
            RestClient client,
            String path,
            String trade,
            BigDecimal amount,
            AtomicInteger requests,
            Map<String, BigDecimal> accepted,
            AtomicInteger duplicates,
            AtomicInteger busy,
            AtomicInteger failed) {
        requests.incrementAndGet();
        client.post()
                .uri(path)
                .contentType(MediaType.APPLICATION_JSON)
                .body(Map.of("channel", "APP", "outTradeNo", trade, "amount", amount))
                .exchange((request, response) -> {
                    HttpStatusCode status = response.getStatusCode();
                    if (status.value() == 200) {
                        if ("true".equals(response.getHeaders().getFirst("Repayment-Duplicate"))) {
                            duplicates.incrementAndGet();
                        } else if (accepted.putIfAbsent(trade, amount) != null) {
                            failed.incrementAndGet(); // the same trade accepted twice would be a double debit
                        }
                    } else if (status.value() == 409) {
                        busy.incrementAndGet();
                    } else {
                        failed.incrementAndGet();
                    }
                    return null;
                });
    }
}
