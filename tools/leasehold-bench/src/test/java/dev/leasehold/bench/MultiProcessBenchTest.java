package dev.leasehold.bench;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.within;

import dev.leasehold.LockService;
import dev.leasehold.memory.InMemoryLeaseStore;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import org.junit.jupiter.api.Test;

/** The multi-process scenario's bookkeeping, on the in-memory store: a smoke run of a few hundred ms. */
class MultiProcessBenchTest {

    @Test
    void twoProcessesOnOneKeyRecordGrantsWithoutOverlapAndBothGetTheKey() throws Exception {
        InMemoryLeaseStore shared = new InMemoryLeaseStore();
        List<Contender> processes = List.of(memory(shared), memory(shared));
        MultiProcessBench.Run run = new MultiProcessBench.Run();
        run.name = "memory";
        long start = HotKeyWorkload.nowMicros() + 20_000;
        run.measureFrom = start + 50_000;
        run.end = run.measureFrom + 250_000;
        ExecutorService pool = Executors.newFixedThreadPool(2);
        try {
            List<Future<List<HotKeyWorkload.GrantRecord>>> done = new ArrayList<>();
            for (int p = 0; p < 2; p++) {
                Contender c = processes.get(p);
                int process = p;
                done.add(pool.submit(() -> HotKeyWorkload.run(c, process, 2, "hot", 1_000_000, start, run.end)));
            }
            for (Future<List<HotKeyWorkload.GrantRecord>> f : done) {
                run.records.addAll(f.get());
            }
        } finally {
            pool.shutdownNow();
            for (Contender c : processes) {
                c.close();
            }
        }

        MultiProcessBench.Report report = MultiProcessBench.analyse("memory", "memory", "inproc", 2, 2, run, 0, "");

        assertThat(report.overlaps()).isZero();
        assertThat(report.grants()).isGreaterThan(10);
        assertThat(report.minPerProcess()).isPositive();
        assertThat(report.jain()).isBetween(0.5, 1.0);
        assertThat(report.p50Millis()).isPositive();
    }

    @Test
    void aHistoryWhereAGrantBeginsBeforeThePreviousEndsCountsAsAnOverlap() {
        MultiProcessBench.Run run = new MultiProcessBench.Run();
        run.measureFrom = 0;
        run.end = 10_000;
        run.records.add(new HotKeyWorkload.GrantRecord(0, 0, 1_000, 2_000, 5));
        run.records.add(new HotKeyWorkload.GrantRecord(1, 0, 1_500, 2_500, 5)); // began inside the first
        run.records.add(new HotKeyWorkload.GrantRecord(1, 1, 3_000, 4_000, 5));
        run.records.add(new HotKeyWorkload.GrantRecord(1, 1, 5_000, 6_000, 5));

        MultiProcessBench.Report report = MultiProcessBench.analyse("x", "x", "inproc", 2, 2, run, 0, "");

        assertThat(report.overlaps()).isEqualTo(1);
        assertThat(report.grants()).isEqualTo(4);
        assertThat(report.ownerChangesPerSecond() * report.seconds()).isCloseTo(2, within(1e-9));
        assertThat(report.processChangesPerSecond() * report.seconds()).isCloseTo(1, within(1e-9));
        assertThat(report.minPerProcess()).isEqualTo(1);
        assertThat(report.maxPerProcess()).isEqualTo(3);
    }

    @Test
    void jainIndexIsOneForEqualSharesAndOneOverNWhenOneProcessHasAll() {
        assertThat(MultiProcessBench.jain(new int[] {5, 5, 5, 5})).isCloseTo(1.0, within(1e-12));
        assertThat(MultiProcessBench.jain(new int[] {20, 0, 0, 0})).isCloseTo(0.25, within(1e-12));
        assertThat(MultiProcessBench.jain(new int[] {2, 1})).isCloseTo(0.9, within(1e-12));
    }

    @Test
    void benchDatabaseUrlKeepsServerAndParameters() {
        assertThat(MultiProcessBench.inBenchDatabase("jdbc:postgresql://127.0.0.1:5432/test"))
                .isEqualTo("jdbc:postgresql://127.0.0.1:5432/leasehold_bench");
        assertThat(MultiProcessBench.inBenchDatabase("jdbc:mariadb://db:3306/test?useSsl=false"))
                .isEqualTo("jdbc:mariadb://db:3306/leasehold_bench?useSsl=false");
    }

    private static Contender memory(InMemoryLeaseStore shared) {
        return Contenders.leasehold(
                "memory", "memory", LockService.builder(shared).build(), () -> {});
    }
}
