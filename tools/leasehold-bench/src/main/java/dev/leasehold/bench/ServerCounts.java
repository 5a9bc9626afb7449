package dev.leasehold.bench;

import io.lettuce.core.api.StatefulRedisConnection;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import javax.sql.DataSource;

/** What the servers themselves count: Redis command calls, PostgreSQL transactions per database. */
final class ServerCounts {

    /**
     * Redis commands that only a client sends (never a script): each call is one round trip. Commands
     * a contender sends outside scripts besides these are named by {@link Contender#plainCommands()}.
     */
    static final Set<String> ROUND_TRIP_COMMANDS = Set.of(
            "eval",
            "evalsha",
            "eval_ro",
            "evalsha_ro",
            "fcall",
            "fcall_ro",
            "subscribe",
            "unsubscribe",
            "psubscribe",
            "punsubscribe",
            "ssubscribe",
            "sunsubscribe",
            "ping",
            "multi",
            "exec");

    /** Commands the bench itself sends to read the counts. */
    private static final Set<String> OURS = Set.of("info", "client|setinfo", "client|setname", "hello");

    private ServerCounts() {}

    /** Calls per command, from {@code INFO commandstats}. */
    static Map<String, Long> redis(StatefulRedisConnection<String, String> stats) {
        Map<String, Long> calls = new TreeMap<>();
        for (String line : stats.sync().info("commandstats").split("\r?\n")) {
            if (line.startsWith("cmdstat_")) {
                String name = line.substring(8, line.indexOf(':'));
                int at = line.indexOf("calls=") + 6;
                calls.put(name, Long.parseLong(line.substring(at, line.indexOf(',', at))));
            }
        }
        return calls;
    }

    /** The difference of two {@link #redis} snapshots, without the bench's own commands. */
    static Map<String, Long> delta(Map<String, Long> before, Map<String, Long> after) {
        Map<String, Long> delta = new TreeMap<>();
        after.forEach((name, calls) -> {
            long d = calls - before.getOrDefault(name, 0L);
            if (d > 0 && !OURS.contains(name)) {
                delta.put(name, d);
            }
        });
        return delta;
    }

    /** Round trips in a delta: the client-only commands and the contender's own plain commands. */
    static long roundTrips(Map<String, Long> delta, Set<String> plain) {
        return delta.entrySet().stream()
                .filter(e -> ROUND_TRIP_COMMANDS.contains(e.getKey()) || plain.contains(e.getKey()))
                .mapToLong(Map.Entry::getValue)
                .sum();
    }

    /** A delta per grant, largest first, for the report. */
    static String perGrant(Map<String, Long> delta, long grants) {
        StringBuilder sb = new StringBuilder();
        delta.entrySet().stream()
                .sorted(Map.Entry.<String, Long>comparingByValue().reversed())
                .forEach(e -> {
                    double per = e.getValue() / (double) Math.max(1, grants);
                    if (per >= 0.01) {
                        sb.append(sb.length() == 0 ? "" : ", ")
                                .append(String.format(Locale.ROOT, "%s %.2f", e.getKey(), per));
                    }
                });
        return sb.toString();
    }

    /**
     * Committed plus rolled-back transactions of one database, as PostgreSQL counts them. A backend
     * reports its counts at most once a second while busy and always when it exits, so read this only
     * after the pools that used the database are closed; {@link #settledTransactions} waits for that.
     */
    static long transactions(DataSource admin, String database) throws SQLException {
        try (Connection c = admin.getConnection();
                PreparedStatement s = c.prepareStatement(
                        "SELECT xact_commit + xact_rollback FROM pg_stat_database WHERE datname = ?")) {
            s.setString(1, database);
            try (ResultSet row = s.executeQuery()) {
                return row.next() ? row.getLong(1) : -1;
            }
        }
    }

    /** {@link #transactions} once two readings 300 ms apart agree (at most about 5 s). */
    static long settledTransactions(DataSource admin, String database) throws SQLException, InterruptedException {
        long last = transactions(admin, database);
        for (int i = 0; i < 16; i++) {
            Thread.sleep(300);
            long now = transactions(admin, database);
            if (now == last) {
                return now;
            }
            last = now;
        }
        return last;
    }
}
