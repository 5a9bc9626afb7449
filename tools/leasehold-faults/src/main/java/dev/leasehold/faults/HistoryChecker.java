package dev.leasehold.faults;

import dev.leasehold.faults.History.Kind;
import dev.leasehold.faults.History.Op;
import dev.leasehold.faults.History.Result;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.stream.Collectors;
import javax.sql.DataSource;

/**
 * Checks the invariants of lease locks over a whole {@link History}, whatever the scenario:
 *
 * <ol>
 *   <li><b>fences</b>: at each guarded resource, per key, a write accepted after another accepted
 *       write completed carries a greater fence, or the same fence of the same grant (its retry);
 *   <li><b>grants</b>, on a store that kept its data: two grants of one key are never held at once.
 *       A grant is held from its acquire's completion until its holder releases it (the release's
 *       invocation), is told it is lost ({@code onLost}) or its process dies, else to the end of
 *       the history; an
 *       overlap up to the stated uncertainty is allowed. All times come from one JVM's monotonic
 *       clock, so there is no skew between processes; the bound covers the time from the lease's
 *       local deadline to the {@code onLost} callback that records it;
 *   <li><b>effects</b>: every write acknowledged as accepted exists exactly once at its resource,
 *       and nothing of a write refused or of unknown outcome exists more than once (refused: never);
 *   <li><b>releases</b>: an acknowledged release freed only its own grant: every inspection made
 *       wholly inside another grant's holding shows that grant.
 * </ol>
 */
final class HistoryChecker {

    private static final int KEPT = 8;

    /**
     * What the checker found.
     *
     * @param operations operations checked
     * @param faults faults injected
     * @param violations what broke, the first few
     * @param violationCount how many broke
     * @param uncertainty the overlap allowed between two grants, or {@code null} if grants were not
     *     checked for overlap (the store lost data)
     */
    record Verdict(int operations, int faults, List<String> violations, int violationCount, Duration uncertainty) {

        boolean ok() {
            return violationCount == 0;
        }

        /** As the report prints it. */
        String summary() {
            return (ok() ? "ok" : "FAIL: " + violationCount + " violations") + " (" + operations + " ops, " + faults
                    + " faults, "
                    + (uncertainty == null ? "overlaps not checked" : "overlap bound " + uncertainty.toMillis() + " ms")
                    + ")";
        }
    }

    private final Duration uncertainty;
    private final boolean storeKeptData;

    /**
     * @param uncertainty how much two grants of one key may seem to overlap
     * @param storeKeptData whether the store kept its data through the faults (else grants are not
     *     checked for overlap)
     */
    HistoryChecker(Duration uncertainty, boolean storeKeptData) {
        this.uncertainty = Objects.requireNonNull(uncertainty, "uncertainty");
        this.storeKeptData = storeKeptData;
    }

    /**
     * Checks {@code history}; {@code effectCounts} is how many times each effect (a write's row id)
     * exists at its resource now.
     */
    Verdict check(History history, Map<String, Long> effectCounts) {
        List<Op> ops = history.ops();
        List<String> found = new ArrayList<>();
        fences(ops, found);
        List<Grant> grants = grants(ops);
        if (storeKeptData) {
            overlaps(grants, found);
        }
        effects(ops, effectCounts, found);
        releases(ops, grants, found);
        return new Verdict(
                ops.size(),
                history.faults().size(),
                found.subList(0, Math.min(KEPT, found.size())),
                found.size(),
                storeKeptData ? uncertainty : null);
    }

    /** How many times each effect exists in {@code table}'s {@code effect} column. */
    static Map<String, Long> effectCounts(DataSource dataSource, String table) throws SQLException {
        Map<String, Long> counts = new HashMap<>();
        try (Connection connection = dataSource.getConnection();
                PreparedStatement select =
                        connection.prepareStatement("SELECT effect, COUNT(*) FROM " + table + " GROUP BY effect");
                ResultSet rows = select.executeQuery()) {
            while (rows.next()) {
                counts.put(rows.getString(1), rows.getLong(2));
            }
        }
        return counts;
    }

    private static void fences(List<Op> ops, List<String> found) {
        Map<String, List<Op>> byResourceKey = ops.stream()
                .filter(op -> op.kind() == Kind.WRITE && op.result() == Result.OK)
                .collect(Collectors.groupingBy(
                        op -> op.resource() + "|" + op.key(), LinkedHashMap::new, Collectors.toList()));
        for (List<Op> writes : byResourceKey.values()) {
            List<Op> byCompletion = new ArrayList<>(writes);
            byCompletion.sort(Comparator.comparingLong(Op::completeNanos));
            List<Op> byInvocation = new ArrayList<>(writes);
            byInvocation.sort(Comparator.comparingLong(Op::invokeNanos));
            int done = 0;
            Op newest = null;
            for (Op write : byInvocation) {
                while (done < byCompletion.size() && byCompletion.get(done).completeNanos() < write.invokeNanos()) {
                    Op before = byCompletion.get(done++);
                    if (newest == null || before.fence() > newest.fence()) {
                        newest = before;
                    }
                }
                if (newest == null) {
                    continue;
                }
                if (write.fence() < newest.fence()
                        || (write.fence() == newest.fence() && !Objects.equals(write.owner(), newest.owner()))) {
                    found.add(
                            "fences: " + write.resource() + " accepted " + write + " after it had accepted " + newest);
                }
            }
        }
    }

    /** A grant and when its holder held it. */
    private record Grant(Op acquire, long from, long until, String endedBy) {}

    private static List<Grant> grants(List<Op> ops) {
        long end = ops.stream().mapToLong(Op::completeNanos).max().orElse(0);
        Map<String, Op> acquired = new LinkedHashMap<>();
        Map<String, Long> ended = new LinkedHashMap<>();
        Map<String, String> endedBy = new LinkedHashMap<>();
        for (Op op : ops) {
            if (op.kind() == Kind.ACQUIRE && op.result() == Result.OK) {
                acquired.putIfAbsent(op.grant(), op); // re-entry: the first acquire of the grant
            }
        }
        for (Op op : ops) {
            long at;
            if (op.kind() == Kind.RELEASE) {
                at = op.invokeNanos();
            } else if (op.kind() == Kind.LOST || op.kind() == Kind.CRASHED) {
                at = op.completeNanos();
            } else {
                continue;
            }
            if (ended.getOrDefault(op.grant(), Long.MAX_VALUE) > at) {
                ended.put(op.grant(), at);
                endedBy.put(op.grant(), op.kind().name());
            }
        }
        List<Grant> grants = new ArrayList<>();
        for (Op op : acquired.values()) {
            grants.add(new Grant(
                    op,
                    op.completeNanos(),
                    Math.max(op.completeNanos(), ended.getOrDefault(op.grant(), end)),
                    endedBy.getOrDefault(op.grant(), "the end")));
        }
        return grants;
    }

    private void overlaps(List<Grant> grants, List<String> found) {
        Map<String, List<Grant>> byKey = grants.stream()
                .collect(Collectors.groupingBy(g -> g.acquire().key(), LinkedHashMap::new, Collectors.toList()));
        for (List<Grant> ofKey : byKey.values()) {
            ofKey.sort(Comparator.comparingLong(Grant::from));
            Grant longest = null;
            for (Grant grant : ofKey) {
                if (longest != null && grant.from() < longest.until() - uncertainty.toNanos()) {
                    found.add("grants: " + grant.acquire() + " was granted "
                            + Duration.ofNanos(longest.until() - grant.from()).toMillis() + " ms before "
                            + longest.acquire() + " ended (by " + longest.endedBy() + ")");
                }
                if (longest == null || grant.until() > longest.until()) {
                    longest = grant;
                }
            }
        }
    }

    private static void effects(List<Op> ops, Map<String, Long> counts, List<String> found) {
        for (Op op : ops) {
            if (op.kind() != Kind.WRITE || op.effect() == null) {
                continue;
            }
            long count = counts.getOrDefault(op.effect(), 0L);
            if (op.result() == Result.OK && count != 1) {
                found.add("effects: acknowledged " + op + " exists " + count + " times");
            } else if (op.result() == Result.REFUSED && count != 0) {
                found.add("effects: refused " + op + " exists " + count + " times");
            } else if (op.result() == Result.UNKNOWN && count > 1) {
                found.add("effects: " + op + " of unknown outcome exists " + count + " times");
            }
        }
    }

    private static void releases(List<Op> ops, List<Grant> grants, List<String> found) {
        for (Op inspect : ops) {
            if (inspect.kind() != Kind.INSPECT || inspect.result() != Result.OK) {
                continue;
            }
            for (Grant grant : grants) {
                Op held = grant.acquire();
                if (!held.key().equals(inspect.key())
                        || inspect.invokeNanos() < grant.from()
                        || inspect.completeNanos() > grant.until()
                        || !grant.endedBy().equals("the end")
                                && !grant.endedBy().equals("RELEASE")) {
                    continue;
                }
                if (inspect.fence() != held.fence()) {
                    String release = ops.stream()
                            .filter(op -> op.kind() == Kind.RELEASE
                                    && op.result() == Result.OK
                                    && op.key().equals(held.key())
                                    && !op.grant().equals(held.grant())
                                    && op.completeNanos() < inspect.invokeNanos())
                            .map(Op::toString)
                            .reduce((a, b) -> b)
                            .orElse("no acknowledged release");
                    found.add("releases: " + held + " was still held, but the store showed fence " + inspect.fence()
                            + " (last release of another grant: " + release + ")");
                }
            }
        }
    }
}
