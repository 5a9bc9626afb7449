package dev.leasehold.faults;

import dev.leasehold.faults.History.Kind;
import dev.leasehold.faults.History.Op;
import dev.leasehold.faults.History.Result;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

/**
 * The operations of a {@link Workload} that runs inside a child JVM, in the parent's {@link History}.
 * The child tells each operation as it is invoked and as it is recorded ({@link #journal}), one line
 * each; the parent adds the recorded ones to its history, their times moved onto its own clock
 * ({@link #clockOffset}), and once it has killed the child ({@link #killed}) adds what the kill cut
 * short: every operation invoked and never recorded, with an unknown outcome, completed when the
 * child was gone, and every grant whose release was never invoked, ended by the crash ({@link
 * Kind#CRASHED}). A line the kill cut in half is ignored: its operation counts as not recorded.
 * Not thread-safe: one scenario thread reads the child.
 */
final class ChildOps {

    /** The last field of every line: a line without it was cut short. */
    private static final String END = ".";

    private final History history;
    private final long offsetNanos;
    private final Map<String, Op> pending = new HashMap<>();
    private final Map<String, Op> held = new LinkedHashMap<>();
    private final List<String> lines = new ArrayList<>();
    private int recorded;

    /**
     * @param history the parent's history
     * @param offsetNanos the child's clock minus the parent's ({@link #clockOffset})
     */
    ChildOps(History history, long offsetNanos) {
        this.history = history;
        this.offsetNanos = offsetNanos;
    }

    /** The child's side: a journal that writes each operation to the parent through {@code io}. */
    static History.Journal journal(ChildJvm.Io io) {
        return new History.Journal() {
            @Override
            public void invoked(Op pending) {
                io.op(encode("I", pending));
            }

            @Override
            public void recorded(Op op) {
                io.op(encode("C", op));
            }
        };
    }

    static String encode(String phase, Op op) {
        return String.join(
                " ",
                phase,
                op.process(),
                op.kind().name(),
                op.key(),
                orDash(op.owner()),
                Long.toString(op.invokeNanos()),
                Long.toString(op.completeNanos()),
                Long.toString(op.fence()),
                op.result().name(),
                orDash(op.resource()),
                orDash(op.effect()),
                END);
    }

    /**
     * The child's {@link System#nanoTime()} minus this JVM's, asked with the child's {@code NANOS}
     * command: 0 when the child's answer lies between the question and the answer's arrival (on
     * Linux both read the same monotonic clock), else the difference to the middle of that round
     * trip.
     */
    static long clockOffset(ChildJvm child) {
        long before = System.nanoTime();
        child.send("NANOS");
        long theirs = Long.parseLong(child.expect("NANOS", Duration.ofSeconds(30)));
        long after = System.nanoTime();
        if (theirs >= before && theirs <= after) {
            return 0;
        }
        return theirs - (before + after) / 2;
    }

    /** Adds the lines the child has sent so far. */
    void pull(ChildJvm child) {
        child.drainOps(lines);
        for (String line : lines) {
            accept(line);
        }
        lines.clear();
    }

    /** How many operations of the child the history holds. */
    int recorded() {
        return recorded;
    }

    /**
     * Waits until the history holds {@code count} operations of the child, at most {@code atMost}
     * (or until the child has exited); whether it does.
     */
    boolean awaitRecorded(ChildJvm child, int count, Duration atMost) throws InterruptedException {
        long deadline = System.nanoTime() + atMost.toNanos();
        while (true) {
            pull(child);
            if (recorded >= count) {
                return true;
            }
            if (!child.process().isAlive() || System.nanoTime() > deadline) {
                return false;
            }
            TimeUnit.MILLISECONDS.sleep(10); // polls the lines received; nothing to be notified of
        }
    }

    /**
     * After the child was killed and its output has ended: adds its last lines, then each
     * operation in flight (unknown outcome, completed at {@code goneNanos}) and the end by the crash
     * of each grant it had not begun to release.
     *
     * @return the acquires of those grants, for checks of when their keys were taken again
     */
    Killed killed(ChildJvm child, long goneNanos) {
        pull(child);
        return killed(goneNanos);
    }

    /** As {@link #killed(ChildJvm, long)}, with every line already {@linkplain #accept accepted}. */
    Killed killed(long goneNanos) {
        for (Op op : pending.values()) {
            history.add(new Op(
                    op.process(),
                    op.kind(),
                    op.key(),
                    op.owner(),
                    op.invokeNanos(),
                    Math.max(goneNanos, op.invokeNanos()),
                    op.fence(),
                    Result.UNKNOWN,
                    op.resource(),
                    op.effect()));
        }
        for (Op acquire : held.values()) {
            history.add(new Op(
                    acquire.process(),
                    Kind.CRASHED,
                    acquire.key(),
                    acquire.owner(),
                    goneNanos,
                    goneNanos,
                    acquire.fence(),
                    Result.OK,
                    null,
                    null));
        }
        Killed killed = new Killed(pending.size(), List.copyOf(held.values()));
        pending.clear();
        held.clear();
        return killed;
    }

    /**
     * What the kill cut short.
     *
     * @param inFlight operations invoked and never recorded
     * @param held the acquires of the grants held, their release not begun
     */
    record Killed(int inFlight, List<Op> held) {}

    /** Takes one line of the child: an operation invoked or recorded; a line cut short is ignored. */
    void accept(String line) {
        String[] f = line.split(" ", -1);
        if (f.length != 12 || !f[11].equals(END)) {
            return; // cut short by the kill
        }
        Op op = new Op(
                f[1],
                Kind.valueOf(f[2]),
                f[3],
                dash(f[4]),
                Long.parseLong(f[5]) - offsetNanos,
                Long.parseLong(f[6]) - offsetNanos,
                Long.parseLong(f[7]),
                Result.valueOf(f[8]),
                dash(f[9]),
                dash(f[10]));
        if (f[0].equals("I")) {
            pending.put(op.process(), op);
            if (op.kind() == Kind.RELEASE) {
                held.remove(op.grant()); // from here the key may be free
            }
            return;
        }
        Op invoked = pending.get(op.process());
        if (invoked != null && invoked.kind() == op.kind() && invoked.invokeNanos() == op.invokeNanos()) {
            pending.remove(op.process());
        }
        history.add(op);
        recorded++;
        if (op.kind() == Kind.ACQUIRE && op.result() == Result.OK) {
            held.put(op.grant(), op);
        } else if (op.kind() == Kind.RELEASE) {
            held.remove(op.grant());
        }
    }

    private static String orDash(String value) {
        return value == null ? "-" : value;
    }

    private static String dash(String field) {
        return field.equals("-") ? null : field;
    }
}
