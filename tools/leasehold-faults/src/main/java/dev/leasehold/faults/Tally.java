package dev.leasehold.faults;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;

/**
 * Counts what a scenario sees while it runs: operations, canary and protected violations (each
 * with a short description, the first few kept), and the longest stall. Thread-safe.
 */
final class Tally {

    private static final int KEPT = 8;

    private final String scenario;
    private final String backend;
    private final AtomicInteger operations = new AtomicInteger();
    private final AtomicInteger canary = new AtomicInteger();
    private final AtomicInteger protectedViolations = new AtomicInteger();
    private final AtomicLong longestStallNanos = new AtomicLong();
    private final List<String> details = new ArrayList<>();
    private volatile HistoryChecker.Verdict verdict;

    Tally(String scenario, String backend) {
        this.scenario = scenario;
        this.backend = backend;
    }

    void operation() {
        operations.incrementAndGet();
    }

    void operations(int count) {
        operations.addAndGet(count);
    }

    int operationCount() {
        return operations.get();
    }

    /** The unprotected canary showed the fault. */
    void canary(String what) {
        canary.incrementAndGet();
        keep("canary: " + what);
    }

    /** The protected path broke its guarantee. */
    void violation(String what) {
        protectedViolations.incrementAndGet();
        keep("VIOLATION: " + what);
    }

    int violations() {
        return protectedViolations.get();
    }

    int canaries() {
        return canary.get();
    }

    void stall(Duration duration) {
        longestStallNanos.accumulateAndGet(duration.toNanos(), Math::max);
    }

    void stallSince(long startNanos) {
        stall(Duration.ofNanos(System.nanoTime() - startNanos));
    }

    /** A figure worth printing with the row. */
    void note(String what) {
        synchronized (details) {
            details.add(what);
        }
    }

    private void keep(String what) {
        synchronized (details) {
            long kept = details.stream()
                    .filter(d -> d.startsWith(what.substring(0, what.indexOf(':'))))
                    .count();
            if (kept < KEPT) {
                details.add(what);
            }
        }
    }

    /**
     * The history checker's verdict over this run: each of its violations counts as a protected
     * one, and the row prints its faults and verdict.
     */
    void checked(HistoryChecker.Verdict checked) {
        this.verdict = checked;
        for (String v : checked.violations()) {
            keep("VIOLATION: history: " + v);
        }
        protectedViolations.addAndGet(checked.violationCount());
    }

    /** Checks {@code history} with {@code checker} and takes its verdict as {@link #checked} does. */
    void check(HistoryChecker checker, History history, Map<String, Long> effectCounts) {
        HistoryChecker.Verdict checked = checker.check(history, effectCounts);
        checked(checked);
        note("history: " + checked.summary());
    }

    Outcome outcome() {
        synchronized (details) {
            return new Outcome(
                    scenario,
                    backend,
                    Outcome.Status.RAN,
                    operations.get(),
                    canary.get(),
                    protectedViolations.get(),
                    Duration.ofNanos(longestStallNanos.get()),
                    details,
                    verdict == null ? -1 : verdict.faults(),
                    verdict == null ? "-" : verdict.summary());
        }
    }
}
