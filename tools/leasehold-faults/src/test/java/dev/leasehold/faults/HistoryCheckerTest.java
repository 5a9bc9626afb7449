package dev.leasehold.faults;

import static org.assertj.core.api.Assertions.assertThat;

import dev.leasehold.faults.History.Kind;
import dev.leasehold.faults.History.Op;
import dev.leasehold.faults.History.Result;
import java.time.Duration;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** The history checker on histories written by hand: each invariant, kept and broken. */
class HistoryCheckerTest {

    private static final long MS = 1_000_000L;
    private final HistoryChecker checker = new HistoryChecker(Duration.ofMillis(100), true);

    private static Op acquire(String process, String owner, long at, long fence) {
        return new Op(process, Kind.ACQUIRE, "k", owner, at * MS, (at + 1) * MS, fence, Result.OK, null, null);
    }

    private static Op release(String process, String owner, long at, long fence) {
        return new Op(process, Kind.RELEASE, "k", owner, at * MS, (at + 1) * MS, fence, Result.OK, null, null);
    }

    private static Op write(String process, String owner, long at, long fence, Result result, String effect) {
        return new Op(process, Kind.WRITE, "k", owner, at * MS, (at + 1) * MS, fence, result, "t", effect);
    }

    private static Op inspect(long at, long fence) {
        return new Op("C", Kind.INSPECT, "k", null, at * MS, (at + 1) * MS, fence, Result.OK, null, null);
    }

    private static History history(Op... ops) {
        History history = new History();
        for (Op op : ops) {
            history.add(op);
        }
        history.fault("a fault");
        return history;
    }

    @Test
    void aCleanHandOverPasses() {
        HistoryChecker.Verdict verdict = checker.check(
                history(
                        acquire("A", "a", 0, 1),
                        write("A", "a", 10, 1, Result.OK, "e1"),
                        new Op("A", Kind.LOST, "k", "a", 1000 * MS, 1000 * MS, 1, Result.OK, null, null),
                        acquire("B", "b", 1050, 2),
                        write("B", "b", 1100, 2, Result.OK, "e2"),
                        write("A", "a", 1200, 1, Result.REFUSED, "e3"),
                        inspect(1300, 2),
                        release("B", "b", 1400, 2)),
                Map.of("e1", 1L, "e2", 1L));
        assertThat(verdict.violations()).isEmpty();
        assertThat(verdict.ok()).isTrue();
        assertThat(verdict.operations()).isEqualTo(8);
        assertThat(verdict.faults()).isEqualTo(1);
        assertThat(verdict.summary()).startsWith("ok (8 ops, 1 faults");
    }

    @Test
    void aFenceAcceptedAfterAGreaterOneIsAViolationAndSoIsTheSameFenceOfAnotherGrant() {
        HistoryChecker.Verdict back = checker.check(
                history(write("B", "b", 0, 5, Result.OK, "e1"), write("A", "a", 10, 4, Result.OK, "e2")),
                Map.of("e1", 1L, "e2", 1L));
        assertThat(back.violations()).singleElement().asString().startsWith("fences:");
        HistoryChecker.Verdict repeated = checker.check(
                history(write("B", "b", 0, 5, Result.OK, "e1"), write("A", "a", 10, 5, Result.OK, "e2")),
                Map.of("e1", 1L, "e2", 1L));
        assertThat(repeated.violations()).singleElement().asString().startsWith("fences:");
        HistoryChecker.Verdict retry = checker.check(
                history(write("A", "a", 0, 5, Result.OK, "e1"), write("A", "a", 10, 5, Result.OK, "e2")),
                Map.of("e1", 1L, "e2", 1L));
        assertThat(retry.ok()).as("the same grant writing twice").isTrue();
    }

    @Test
    void twoGrantsHeldAtOnceBeyondTheBoundAreAViolationWithinItNot() {
        HistoryChecker.Verdict overlap = checker.check(
                history(acquire("A", "a", 0, 1), acquire("B", "b", 500, 2), release("A", "a", 900, 1)), Map.of());
        assertThat(overlap.violations())
                .singleElement()
                .asString()
                .startsWith("grants:")
                .contains("399 ms");
        HistoryChecker.Verdict withinBound = checker.check(
                history(acquire("A", "a", 0, 1), acquire("B", "b", 850, 2), release("A", "a", 900, 1)), Map.of());
        assertThat(withinBound.ok()).isTrue();
        HistoryChecker.Verdict reentry = checker.check(
                history(acquire("A", "a", 0, 1), acquire("A", "a", 100, 1), release("A", "a", 900, 1)), Map.of());
        assertThat(reentry.ok()).as("re-entry is one grant").isTrue();
        HistoryChecker.Verdict lostStore = new HistoryChecker(Duration.ofMillis(100), false)
                .check(history(acquire("A", "a", 0, 1), acquire("B", "b", 500, 2)), Map.of());
        assertThat(lostStore.ok())
                .as("a store that lost its data is not checked for overlaps")
                .isTrue();
    }

    @Test
    void anAcknowledgedEffectMissingOrTwiceAndARefusedOneThatLandedAreViolations() {
        HistoryChecker.Verdict verdict = checker.check(
                history(
                        write("A", "a", 0, 1, Result.OK, "missing"),
                        write("A", "a", 10, 1, Result.OK, "twice"),
                        write("A", "a", 20, 1, Result.REFUSED, "landed"),
                        write("A", "a", 30, 1, Result.UNKNOWN, "unknown")),
                Map.of("twice", 2L, "landed", 1L, "unknown", 1L));
        assertThat(verdict.violationCount()).isEqualTo(3);
        assertThat(verdict.violations()).allSatisfy(v -> assertThat(v).startsWith("effects:"));
    }

    @Test
    void aReleaseThatFreedAnotherGrantIsAViolationNamingIt() {
        HistoryChecker.Verdict verdict = checker.check(
                history(acquire("C", "c", 0, 2), release("A", "a", 100, 1), inspect(200, 0), release("C", "c", 900, 2)),
                Map.of());
        assertThat(verdict.violations())
                .singleElement()
                .asString()
                .startsWith("releases:")
                .contains("A RELEASE k fence 1 OK");
        assertThat(verdict.summary()).startsWith("FAIL: 1 violations");
    }
}
