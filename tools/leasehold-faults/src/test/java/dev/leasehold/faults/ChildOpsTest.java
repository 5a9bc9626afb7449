package dev.leasehold.faults;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.tuple;

import dev.leasehold.faults.History.Kind;
import dev.leasehold.faults.History.Op;
import dev.leasehold.faults.History.Result;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * A child's operations as the parent's history gets them: recorded ones as they were, in-flight
 * ones unknown, held grants ended by the crash, lines cut short ignored, times moved by the offset.
 */
class ChildOpsTest {

    private static final long MS = 1_000_000L;

    /** The lines a child's history sends through its journal. */
    private static final class Child {
        final List<String> lines = new ArrayList<>();
        final History history = new History(new History.Journal() {
            @Override
            public void invoked(Op pending) {
                lines.add(ChildOps.encode("I", pending));
            }

            @Override
            public void recorded(Op op) {
                lines.add(ChildOps.encode("C", op));
            }
        });

        void invoke(String process, Kind kind, String key, String owner, long at, long fence, String effect) {
            history.invoking(process, kind, key, owner, at * MS, fence, effect == null ? null : "t", effect);
        }

        void record(
                String process,
                Kind kind,
                String key,
                String owner,
                long at,
                long fence,
                Result result,
                String effect) {
            history.add(new Op(
                    process,
                    kind,
                    key,
                    owner,
                    at * MS,
                    (at + 1) * MS,
                    fence,
                    result,
                    effect == null ? null : "t",
                    effect));
        }
    }

    @Test
    void whatTheKillCutShortIsUnknownAndHeldGrantsEndAtTheCrash() {
        Child child = new Child();
        // A: a whole round, then an acquire granted and a write in flight.
        child.invoke("A", Kind.ACQUIRE, "k1", null, 0, 0, null);
        child.record("A", Kind.ACQUIRE, "k1", "a", 0, 5, Result.OK, null);
        child.invoke("A", Kind.RELEASE, "k1", "a", 10, 5, null);
        child.record("A", Kind.RELEASE, "k1", "a", 10, 5, Result.OK, null);
        child.invoke("A", Kind.ACQUIRE, "k2", null, 20, 0, null);
        child.record("A", Kind.ACQUIRE, "k2", "a", 20, 7, Result.OK, null);
        child.invoke("A", Kind.WRITE, "k2", "a", 30, 7, "a-1");
        // B: granted, its release invoked and never answered.
        child.invoke("B", Kind.ACQUIRE, "k1", null, 40, 0, null);
        child.record("B", Kind.ACQUIRE, "k1", "b", 40, 9, Result.OK, null);
        child.invoke("B", Kind.RELEASE, "k1", "b", 50, 9, null);
        // C: an acquire in flight, and a line the kill cut in half.
        child.invoke("C", Kind.ACQUIRE, "k2", null, 60, 0, null);
        String last =
                ChildOps.encode("C", new Op("C", Kind.ACQUIRE, "k2", "c", 60 * MS, 61 * MS, 11, Result.OK, null, null));
        child.lines.add(last.substring(0, last.length() - 3));

        History parent = new History();
        long offset = 1000 * MS; // the child's clock is a second ahead
        ChildOps ops = new ChildOps(parent, offset);
        child.lines.forEach(ops::accept);
        ChildOps.Killed killed = ops.killed(100 * MS);

        assertThat(ops.recorded()).isEqualTo(4);
        assertThat(killed.inFlight()).isEqualTo(3);
        assertThat(killed.held()).extracting(Op::key, Op::owner).containsExactly(tuple("k2", "a"));
        List<Op> added = parent.ops();
        assertThat(added).hasSize(8);
        assertThat(added.get(0).invokeNanos()).isEqualTo(-1000 * MS);
        assertThat(added.subList(4, 7))
                .extracting(Op::process, Op::kind, Op::result)
                .containsExactlyInAnyOrder(
                        tuple("A", Kind.WRITE, Result.UNKNOWN),
                        tuple("B", Kind.RELEASE, Result.UNKNOWN),
                        tuple("C", Kind.ACQUIRE, Result.UNKNOWN));
        assertThat(added.subList(4, 7))
                .allSatisfy(op -> assertThat(op.completeNanos()).isEqualTo(100 * MS));
        Op crash = added.get(7);
        assertThat(crash.kind()).isEqualTo(Kind.CRASHED);
        assertThat(crash.grant()).isEqualTo("k2#7#a");
        assertThat(crash.invokeNanos()).isEqualTo(100 * MS);

        // The checker sees the crashed grant end at the crash and A's write of unknown outcome.
        History whole = new History();
        added.forEach(whole::add);
        whole.add(new Op("P", Kind.ACQUIRE, "k2", "p", 1500 * MS, 1501 * MS, 12, Result.OK, null, null));
        HistoryChecker.Verdict verdict =
                new HistoryChecker(Duration.ofMillis(100), true).check(whole, Map.of("a-1", 1L));
        assertThat(verdict.violations()).isEmpty();
    }

    @Test
    void withoutTheCrashAGrantTakenOverAnotherIsAnOverlap() {
        Child child = new Child();
        child.invoke("A", Kind.ACQUIRE, "k", null, 0, 0, null);
        child.record("A", Kind.ACQUIRE, "k", "a", 0, 5, Result.OK, null);
        History parent = new History();
        ChildOps ops = new ChildOps(parent, 0);
        child.lines.forEach(ops::accept);
        parent.add(new Op("P", Kind.ACQUIRE, "k", "p", 500 * MS, 501 * MS, 6, Result.OK, null, null));
        parent.add(new Op("P", Kind.RELEASE, "k", "p", 900 * MS, 901 * MS, 6, Result.OK, null, null));
        HistoryChecker checker = new HistoryChecker(Duration.ofMillis(100), true);

        assertThat(checker.check(parent, Map.of()).violations()).hasSize(1);
        ops.killed(400 * MS);
        assertThat(checker.check(parent, Map.of()).violations()).isEmpty();
    }
}
